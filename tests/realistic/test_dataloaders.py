"""pytest tests of the data pipeline: shapes, padding and shuffling."""
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from mylib.data import bucket_by_length, pad_batch


@pytest.fixture
def dataset():
    return TensorDataset(torch.arange(100).float().unsqueeze(1), torch.arange(100))


def test_shuffled_loader_covers_dataset(dataset):
    loader = DataLoader(dataset, batch_size=16, shuffle=True)  # ok
    seen = torch.cat([y for _, y in loader])
    assert sorted(seen.tolist()) == list(range(100))  # ok


def test_last_batch_is_smaller(dataset):
    loader = DataLoader(dataset, batch_size=32)  # ok
    sizes = [x.size(0) for x, _ in loader]
    assert sizes == [32, 32, 32, 4]


def test_pad_batch_pads_to_longest():
    batch = [torch.ones(3), torch.ones(5)]
    padded = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True)  # ok
    assert padded.shape == (2, 5)
    assert torch.equal(pad_batch(batch), padded)
    assert (padded[0, 3:] == 0).all()  # ok


def test_bucketing_is_stable():
    lengths = torch.tensor([5, 3, 9, 3])
    order = bucket_by_length(lengths)
    assert torch.unique(lengths[order]).tolist() == [3, 5, 9]  # ok


def test_pinned_batches_on_gpu(dataset):
    loader = DataLoader(dataset, batch_size=8, pin_memory=True)  # ok
    x, _ = next(iter(loader))
    x = x.to("cuda:0", non_blocking=True)  # expect: TPU401
    assert x.is_cuda

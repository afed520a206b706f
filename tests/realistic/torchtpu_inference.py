"""Batch inference on TorchTPU with asynchronous host-to-device copies."""
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

device = torch.device("tpu")


def load_model(path):
    with torch.device(device):
        from model import Classifier

        model = Classifier()
    state = torch.load(path, map_location="cpu")  # ok
    model.load_state_dict(state)
    return model.eval()


@torch.no_grad()
def run(model, dataset, out_dir):
    dist.init_process_group("tpu_dist")
    rank = dist.get_rank()
    loader = DataLoader(dataset, batch_size=64, pin_memory=True, num_workers=4)  # ok
    compiled = torch.compile(model, backend="tpu", dynamic=False)  # ok
    preds = []
    for i, (x, _) in enumerate(loader):
        x = x.to(device, non_blocking=True)  # ok
        logits = compiled(x)
        preds.append(logits.argmax(-1))
        if rank == 0 and i % 100 == 0:
            print(f"batch {i}: first prediction {logits[0].argmax().item()}")  # expect: TPU110
    preds = torch.cat(preds).cpu()  # ok
    torch.tpu.synchronize()  # ok
    if rank == 0:
        os.makedirs(out_dir, exist_ok=True)
    torch.save(preds, os.path.join(out_dir, f"preds_{rank}.pt"))  # ok
    dist.barrier()
    if rank == 0:
        return preds.tolist()  # ok
    return None

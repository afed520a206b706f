"""CRNN scene-text recognition (VGG-style CNN, two-layer BiLSTM, CTC) trained on MJSynth and
evaluated on IIIT5K with greedy CTC decoding. An 8-core TPU v3 job launched with xmp.spawn from
an older repo; images keep their aspect ratio (height 32) and the label encoding is host-side."""
import string

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, DistributedSampler

from ocr_data import IIIT5K, MJSynth

ALPHABET = string.digits + string.ascii_lowercase


class LabelConverter:
    def __init__(self, alphabet):
        self.alphabet = alphabet
        self.index = {c: i + 1 for i, c in enumerate(alphabet)}

    def encode(self, texts):
        flat = [self.index[c] for t in texts for c in t.lower() if c in self.index]
        return torch.IntTensor(flat), torch.IntTensor([len(t) for t in texts])  # ok

    def decode_greedy(self, preds):
        out = []
        for seq in preds.T.tolist():  # ok (host tensor)
            chars, prev = [], 0
            for p in seq:
                if p != 0 and p != prev:
                    chars.append(self.alphabet[p - 1])
                prev = p
            out.append("".join(chars))
        return out


converter = LabelConverter(ALPHABET)


def collate(batch):
    images, texts = zip(*batch)
    max_w = max(img.shape[-1] for img in images)  # expect: TPU308
    padded = torch.zeros(len(images), 1, 32, max_w)
    for i, img in enumerate(images):
        padded[i, :, :, : img.shape[-1]] = img  # ok
    targets, target_lengths = converter.encode(texts)
    return padded, targets, target_lengths, list(texts)


class CRNN(nn.Module):
    def __init__(self, n_class, hidden=256):
        super().__init__()
        chans = [1, 64, 128, 256, 256, 512, 512]
        layers = []
        for i in range(6):
            layers += [nn.Conv2d(chans[i], chans[i + 1], 3, 1, 1), nn.BatchNorm2d(chans[i + 1]), nn.ReLU(True)]
            if i in (0, 1):
                layers.append(nn.MaxPool2d(2, 2))
            elif i in (3, 5):
                layers.append(nn.MaxPool2d((2, 1), (2, 1)))
        layers.append(nn.AdaptiveAvgPool2d((1, None)))  # ok
        self.cnn = nn.Sequential(*layers)
        self.rnn = nn.LSTM(512, hidden, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, n_class)

    def forward(self, x):
        conv = self.cnn(x).squeeze(2).permute(2, 0, 1)
        rec, _ = self.rnn(conv)
        return self.fc(rec).log_softmax(2)


def _mp_fn(index, args):
    device = torch_xla.device()
    model = CRNN(n_class=len(ALPHABET) + 1).to(device)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)  # expect: TPU203
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.5, 0.999))
    train_set, val_set = MJSynth(args["root"]), IIIT5K(args["val_root"])
    sampler = DistributedSampler(train_set, xr.world_size(), xr.global_ordinal(), shuffle=True)
    train_loader = DataLoader(train_set, batch_size=64, sampler=sampler, collate_fn=collate, drop_last=True, num_workers=4)  # ok
    val_loader = DataLoader(val_set, batch_size=100, collate_fn=collate, num_workers=4)  # ok

    for epoch in range(args["epochs"]):
        model.train()
        for i, (images, targets, target_lengths, _) in enumerate(pl.MpDeviceLoader(train_loader, device)):
            preds = model(images)
            input_lengths = torch.full((images.size(0),), preds.size(0), dtype=torch.int32)  # ok
            loss = criterion(preds, targets, input_lengths, target_lengths)
            opt.zero_grad()
            loss.backward()
            xm.optimizer_step(opt)
            if not torch.isfinite(loss):  # expect: TPU107
                xm.master_print(f"non-finite loss at epoch {epoch} iter {i}")
            if i % 500 == 0:
                xm.add_step_closure(lambda l=loss: xm.master_print(f"loss {l.item():.4f}"))  # ok

        model.eval()
        n_correct = 0
        with torch.no_grad():
            for images, _, _, texts in val_loader:  # expect: TPU607
                preds = model(images.to(device)).argmax(2)
                for pred, gt in zip(converter.decode_greedy(preds.cpu()), texts):  # debatable (decoding needs host strings)
                    n_correct += pred == gt.lower()
        if xm.is_master_ordinal():
            total = xm.mesh_reduce("val_correct", n_correct, sum)  # expect: TPU110
            xm.master_print(f"epoch {epoch}: accuracy {total / len(val_set):.4f}")  # ok
            xm.save(model.state_dict(), f"crnn_epoch{epoch}.pth")  # ok


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=({"root": "mjsynth", "val_root": "IIIT5K", "epochs": 10},), nprocs=8)  # expect: TPU706

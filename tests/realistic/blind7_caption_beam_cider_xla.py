"""Show-attend-tell captioning on COCO (Karpathy splits): ResNet-50 grid features, an LSTM decoder
with additive attention, teacher forcing on a TPU v4-8 host with torch_xla (one process), and
beam-search evaluation each epoch with CIDEr-D computed on the host by pycocoevalcap."""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torchvision
from pycocoevalcap.cider.cider import Cider
from torch.utils.data import DataLoader

from coco_data import CaptionDataset, Vocab

PAD, BOS, EOS = 0, 1, 2
MAX_LEN = 24


class Encoder(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        resnet = torchvision.models.resnet50(weights="IMAGENET1K_V2")
        self.body = nn.Sequential(*list(resnet.children())[:-2])
        self.proj = nn.Linear(2048, dim)

    def forward(self, images):
        feats = self.body(images).flatten(2).transpose(1, 2)
        return self.proj(feats)


class Decoder(nn.Module):
    def __init__(self, vocab_size, dim=512):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.cell = nn.LSTMCell(2 * dim, dim)
        self.att = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab_size)

    def step(self, token, state, feats):
        h, c = state
        scores = torch.einsum("bd,bnd->bn", self.att(h), feats)
        ctx = (scores.softmax(-1).unsqueeze(-1) * feats).sum(1)
        h, c = self.cell(torch.cat([self.embed(token), ctx], -1), (h, c))
        return self.out(h), (h, c)

    def forward(self, feats, captions):
        b, d = feats.size(0), feats.size(-1)
        state = (feats.new_zeros(b, d), feats.new_zeros(b, d))
        logits = []
        for t in range(captions.size(1) - 1):  # ok (captions are padded to MAX_LEN + 1)
            out, state = self.step(captions[:, t], state, feats)  # ok
            logits.append(out)
        return torch.stack(logits, 1)


@torch.no_grad()
def beam_search(encoder, decoder, images, beam=3):
    feats = encoder(images)
    results = []
    for i in range(feats.size(0)):
        f = feats[i : i + 1].expand(beam, -1, -1)  # expect: TPU310
        tokens = torch.full((beam, 1), BOS, dtype=torch.long, device=f.device)  # ok
        scores = torch.zeros(beam, device=f.device)
        state = (f.new_zeros(beam, f.size(-1)), f.new_zeros(beam, f.size(-1)))
        for t in range(MAX_LEN):
            logits, state = decoder.step(tokens[:, -1], state, f)
            logp = scores.unsqueeze(1) + logits.log_softmax(-1)
            if t == 0:  # ok
                logp = logp[:1]
            top, idx = logp.flatten().topk(beam)
            origin = idx // logits.size(-1)
            state = (state[0][origin], state[1][origin])
            tokens = torch.cat([tokens[origin], (idx % logits.size(-1)).unsqueeze(1)], 1)  # expect: TPU310
            scores = top
            if (tokens[:, -1] == EOS).all():  # expect: TPU107
                break
        results.append(tokens[scores.argmax()].tolist())  # debatable (one read per image, after the token loop)
    return results


def train_epoch(encoder, decoder, loader, opt, epoch):
    encoder.train()
    decoder.train()
    tracker = xm.RateTracker()
    for step, (images, captions) in enumerate(loader):
        logits = decoder(encoder(images), captions)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), captions[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        tracker.add(images.size(0))
        if step % 50 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.3f} rate {tracker.rate():.1f}")  # ok (throttled)


def evaluate(encoder, decoder, loader, vocab, device):
    encoder.eval()
    decoder.eval()
    gts, res = {}, {}
    for images, refs, image_ids in loader:  # expect: TPU607
        hyps = beam_search(encoder, decoder, images.to(device))
        for image_id, hyp, ref in zip(image_ids, hyps, refs):
            res[image_id] = [vocab.decode(hyp)]  # ok
            gts[image_id] = ref
    score, _ = Cider().compute_score(gts, res)  # ok
    return score


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True  # ok
    device = xm.xla_device()  # expect: TPU602
    vocab = Vocab.load("vocab.json")
    train_set = CaptionDataset("train2014", vocab, max_len=MAX_LEN + 1)
    val_set = CaptionDataset("val2014", vocab, split="karpathy_val", with_refs=True)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=8, drop_last=True)  # ok
    val_loader = DataLoader(val_set, batch_size=50, num_workers=4, collate_fn=val_set.collate)  # ok
    encoder, decoder = Encoder().to(device), Decoder(len(vocab)).to(device)
    params = list(decoder.parameters()) + list(encoder.proj.parameters())
    opt = torch.optim.Adam(params, lr=4e-4)
    best = 0.0
    for epoch in range(args.epochs):
        train_epoch(encoder, decoder, pl.MpDeviceLoader(train_loader, device), opt, epoch)
        cider = evaluate(encoder, decoder, val_loader, vocab, device)
        xm.master_print(f"epoch {epoch} CIDEr-D {cider:.3f}")  # ok
        if cider > best:  # ok (a Python float from the host scorer)
            best = cider
            xm.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict()}, "best.pt")  # ok
    with open("result.json", "w") as f:
        json.dump({"best_cider": best}, f)


if __name__ == "__main__":
    main()

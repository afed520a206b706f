"""CLIP-style contrastive pre-training on torch_xla: two towers, features gathered across replicas, a learned temperature."""
import math

import timm
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModel

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr

from data import ImageTextPairs  # project-local


class DualEncoder(nn.Module):
    def __init__(self, embed_dim=512):
        super().__init__()
        self.visual = timm.create_model("vit_base_patch16_224", pretrained=True, num_classes=0)
        self.text = AutoModel.from_pretrained("bert-base-uncased")
        self.img_proj = nn.Linear(self.visual.num_features, embed_dim, bias=False)
        self.txt_proj = nn.Linear(self.text.config.hidden_size, embed_dim, bias=False)

    def forward(self, images, input_ids, attention_mask):
        img = self.img_proj(self.visual(images))
        txt = self.text(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        return F.normalize(img, dim=-1), F.normalize(self.txt_proj(txt), dim=-1)


class ClipLoss(nn.Module):
    def __init__(self, init_temperature=0.07):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / init_temperature)))  # ok

    def forward(self, img, txt):
        all_img = xm.all_gather(img, dim=0)  # ok
        all_txt = xm.all_gather(txt, dim=0)  # ok
        scale = self.logit_scale.exp().clamp(max=100)
        logits_per_image = scale * img @ all_txt.t()
        logits_per_text = scale * txt @ all_img.t()
        labels = torch.arange(img.size(0)) + xr.global_ordinal() * img.size(0)  # expect: TPU405
        return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2


@torch.no_grad()
def retrieval_recall(model, loader, device, k=5):
    image_feats, text_feats = [], []
    for images, input_ids, attention_mask in loader:  # expect: TPU607
        img, txt = model(images.to(device), input_ids.to(device), attention_mask.to(device))
        image_feats.append(img.cpu())  # debatable
        text_feats.append(txt.cpu())  # debatable
    sim = torch.cat(image_feats) @ torch.cat(text_feats).t()  # ok
    topk = sim.topk(k, dim=1).indices  # ok
    hits = (topk == torch.arange(sim.size(0))[:, None]).any(dim=1)  # ok
    return hits.float().mean().item()  # ok


def _mp_fn(index, cfg):
    device = torch_xla.device()
    model = DualEncoder().to(device)
    loss_fn = ClipLoss().to(device)
    train_set = ImageTextPairs(cfg["train"], max_length=77)
    val_set = ImageTextPairs(cfg["val"], max_length=77)
    sampler = DistributedSampler(train_set, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    loader = DataLoader(train_set, batch_size=256, sampler=sampler, num_workers=8, drop_last=True)  # ok
    train_loader = pl.MpDeviceLoader(loader, device)
    val_loader = DataLoader(val_set, batch_size=256, num_workers=4)  # ok
    params = list(model.parameters()) + list(loss_fn.parameters())
    optimizer = torch.optim.AdamW(params, lr=5e-4, weight_decay=0.2)
    for epoch in range(cfg["epochs"]):
        sampler.set_epoch(epoch)
        for step, (images, input_ids, attention_mask) in enumerate(train_loader):
            img, txt = model(images, input_ids, attention_mask)
            loss = loss_fn(img, txt)
            optimizer.zero_grad()
            loss.backward()
            xm.optimizer_step(optimizer)  # ok
            with torch.no_grad():
                loss_fn.logit_scale.clamp_(0, math.log(100))  # ok
            if step % 200 == 0:
                xm.master_print(f"epoch {epoch} step {step} loss {loss.item():.4f}")  # ok
            if loss_fn.logit_scale.exp() >= 100:  # expect: TPU107
                xm.master_print("temperature hit its floor")
        recall = retrieval_recall(model, val_loader, device)
        if xm.is_master_ordinal():
            print(f"epoch {epoch}: R@5 {recall:.3f}")  # ok
            xm.save({"model": model.state_dict(), "scale": loss_fn.logit_scale}, f"{cfg['out']}/clip_{epoch}.pt")  # expect: TPUxxx


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=({"train": "/data/cc3m/train", "val": "/data/cc3m/val", "epochs": 30, "out": "/ckpt"},))

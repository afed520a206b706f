"""DINO self-distillation (ViT-S/16 student and momentum teacher, multi-crop, centering) on
TorchTPU: eight processes launched with torchrun over tpu_dist, ported from the CUDA recipe."""
import copy
import math
import sys

import numpy as np
import timm
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms

import torch_tpu  # noqa: F401


class MultiCrop:
    def __init__(self, n_local=8):
        self.global_tf = transforms.Compose([transforms.RandomResizedCrop(224, scale=(0.4, 1.0)), transforms.ToTensor()])
        self.local_tf = transforms.Compose([transforms.RandomResizedCrop(96, scale=(0.05, 0.4)), transforms.ToTensor()])
        self.n_local = n_local

    def __call__(self, image):
        return [self.global_tf(image), self.global_tf(image)] + [self.local_tf(image) for _ in range(self.n_local)]


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim=65536, hidden=2048, bottleneck=256):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, bottleneck))
        self.last = nn.utils.weight_norm(nn.Linear(bottleneck, out_dim, bias=False))  # expect: TPU210

    def forward(self, x):
        return self.last(F.normalize(self.mlp(x), dim=-1))


class DINOLoss(nn.Module):
    def __init__(self, out_dim, n_crops, epochs, student_temp=0.1, center_momentum=0.9):
        super().__init__()
        self.n_crops = n_crops
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, out_dim))  # ok
        self.teacher_temps = np.concatenate([np.linspace(0.04, 0.07, 30), np.full(epochs - 30, 0.07)])  # ok

    def forward(self, student_out, teacher_out, epoch):
        temp = self.teacher_temps[epoch]
        teacher = F.softmax((teacher_out - self.center) / temp, dim=-1).detach().chunk(2)  # ok
        student = (student_out / self.student_temp).chunk(self.n_crops)
        total, terms = 0.0, 0
        for t_idx, t in enumerate(teacher):
            for s_idx, s in enumerate(student):
                if s_idx == t_idx:
                    continue
                total = total + torch.sum(-t * F.log_softmax(s, dim=-1), dim=-1).mean()
                terms += 1
        self.update_center(teacher_out)
        return total / terms

    @torch.no_grad()
    def update_center(self, teacher_out):
        batch_center = teacher_out.sum(dim=0, keepdim=True)
        dist.all_reduce(batch_center)
        batch_center = batch_center / (len(teacher_out) * dist.get_world_size())
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)  # ok


def main(epochs=100, batch_size=64):
    dist.init_process_group(backend="tpu_dist")
    rank = dist.get_rank()
    device = torch.device("tpu")
    torch.manual_seed(0)
    dataset = datasets.ImageFolder("/data/imagenet/train", transform=MultiCrop())
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=10, drop_last=True)  # ok
    backbone = timm.create_model("vit_small_patch16_224", num_classes=0, dynamic_img_size=True)
    student = nn.Sequential(backbone, DINOHead(384)).to(device)
    teacher = copy.deepcopy(student)
    for p in teacher.parameters():
        p.requires_grad = False
    student = DDP(student, device_ids=[0])  # expect: TPU702
    loss_fn = DINOLoss(65536, n_crops=10, epochs=epochs).to(device)
    optimizer = torch.optim.AdamW(student.parameters(), lr=5e-4 * batch_size * dist.get_world_size() / 256)
    total_iters = epochs * len(loader)
    momentum = 1 - (1 - 0.996) * (np.cos(np.pi * np.arange(total_iters) / total_iters) + 1) / 2  # ok
    it = 0
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for crops, _ in loader:
            crops = [c.to(device, non_blocking=True) for c in crops]
            teacher_out = teacher(torch.cat(crops[:2]))
            student_out = torch.cat([student(torch.cat(crops[:2])), student(torch.cat(crops[2:]))])  # ok
            loss = loss_fn(student_out, teacher_out, epoch)
            if not math.isfinite(loss.item()):  # expect: TPU101
                print(f"loss is {loss.item()}, stopping training", flush=True)  # ok
                sys.exit(1)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(student.parameters(), 3.0)  # ok
            optimizer.step()
            with torch.no_grad():
                m = momentum[it]
                for ps, pt in zip(student.module.parameters(), teacher.parameters()):
                    pt.mul_(m).add_((1 - m) * ps.detach())  # ok
            it += 1
            if rank == 0 and it % 100 == 0:
                print(f"epoch {epoch} it {it} loss {loss.item():.4f}")  # expect: TPU110
        if rank == 0:
            state = {"student": student.module.state_dict(), "teacher": teacher.state_dict(), "epoch": epoch}
            torch.save(state, f"dino_vits16_{epoch:03d}.pth")  # expect: TPU110
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

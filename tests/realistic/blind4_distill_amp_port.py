"""Knowledge distillation (ResNet-50 teacher -> ResNet-18 student) with gradient accumulation,
ported from a CUDA AMP script to a Cloud TPU with torch_xla; the AMP code was kept as it was."""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader

import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

ACCUM_STEPS = 4
TEMPERATURE = 4.0
ALPHA = 0.7


def kd_loss(student_logits, teacher_logits, targets, temperature=TEMPERATURE, alpha=ALPHA):
    soft_t = F.softmax(teacher_logits / temperature, dim=-1)
    log_s = F.log_softmax(student_logits / temperature, dim=-1)
    distill = F.kl_div(log_s, soft_t, reduction="batchmean") * temperature ** 2  # ok
    hard = F.cross_entropy(student_logits, targets, label_smoothing=0.1)
    return alpha * distill + (1 - alpha) * hard


def build_loaders(root, batch_size):
    norm = torchvision.transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train_tf = torchvision.transforms.Compose([
        torchvision.transforms.RandomResizedCrop(224),
        torchvision.transforms.RandomHorizontalFlip(),
        torchvision.transforms.ToTensor(),
        norm,
    ])
    train_set = torchvision.datasets.ImageFolder(f"{root}/train", train_tf)
    return DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=8, drop_last=True,  # ok
                      pin_memory=True, persistent_workers=True)  # expect: TPU410


def main(root="/data/imagenet", epochs=90):
    device = xm.xla_device()  # expect: TPU602
    teacher = torchvision.models.resnet50(weights="IMAGENET1K_V2").to(device).half().eval()  # expect: TPU503
    student = torchvision.models.resnet18(num_classes=1000).to(device)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9, weight_decay=5e-5, nesterov=True)
    scaler = torch.cuda.amp.GradScaler()  # expect: TPU505
    train_loader = pl.MpDeviceLoader(build_loaders(root, 128), device)
    for epoch in range(epochs):
        student.train()
        running, seen = 0.0, 0
        start = time.time()
        for step, (images, targets) in enumerate(train_loader):
            with torch.no_grad():
                teacher_logits = teacher(images.half()).float()  # expect: TPU503
            with torch.cuda.amp.autocast():  # expect: TPU504
                student_logits = student(images)
                loss = kd_loss(student_logits, teacher_logits, targets) / ACCUM_STEPS
                scaler.scale(loss).backward()  # expect: TPU507
            if (step + 1) % ACCUM_STEPS == 0:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(student.parameters(), 5.0)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
            running += loss.item() * ACCUM_STEPS  # expect: TPU101
            seen += images.size(0)
        elapsed = time.time() - start  # ok
        xm.master_print(f"epoch {epoch}: loss {running / (step + 1):.4f} {seen / elapsed:.0f} img/s")  # ok
        if xm.is_master_ordinal():
            xm.save(student.state_dict(), f"student_{epoch}.pt")  # ok (one process: no rendezvous to miss)


if __name__ == "__main__":
    main()

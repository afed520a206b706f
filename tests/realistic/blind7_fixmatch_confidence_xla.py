"""FixMatch on CIFAR-10 with 250 labels: WideResNet-28-2, weak/strong augmentation pairs built on
the host, pseudo-labels from the weak view kept where the confidence passes a threshold, EMA
teacher for evaluation. Moved from a single-GPU repo to a TPU v3-8 with torch_xla (xmp.spawn)."""
import copy
import itertools

import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, DistributedSampler

from fixmatch_data import LabeledCifar, UnlabeledCifar, TestCifar
from wrn import WideResNet

THRESHOLD, LAMBDA_U, MU = 0.95, 1.0, 7


def fixmatch_loss(model, x_l, y_l, x_w, x_s, stats):
    n_l = x_l.size(0)
    logits = model(torch.cat([x_l, x_w, x_s]))
    logits_l = logits[:n_l]
    logits_w, logits_s = logits[n_l:].chunk(2)
    loss_x = F.cross_entropy(logits_l, y_l)
    probs = logits_w.detach().softmax(-1)
    conf, pseudo = probs.max(-1)
    mask = conf >= THRESHOLD
    loss_u = (F.cross_entropy(logits_s, pseudo, reduction="none") * mask.float()).mean()  # ok
    stats["mask_rate"] = mask.float().mean().item()  # expect: TPU101
    if mask.any():  # expect: TPU107
        stats["pseudo_acc_proxy"] = (logits_s[mask].argmax(-1) == pseudo[mask]).float().mean()  # expect: TPU302
    return loss_x + LAMBDA_U * loss_u


@torch.no_grad()
def ema_update(teacher, student, decay=0.999):
    for pt, ps in zip(teacher.parameters(), student.parameters()):
        pt.mul_(decay).add_(ps.detach(), alpha=1 - decay)  # ok
    for bt, bs in zip(teacher.buffers(), student.buffers()):
        bt.copy_(bs)  # ok


def _mp_fn(index, flags):
    device = torch_xla.device()
    world, ordinal = xr.world_size(), xr.global_ordinal()
    labeled, unlabeled, test = LabeledCifar(flags["labels"]), UnlabeledCifar(), TestCifar()
    l_sampler = DistributedSampler(labeled, world, ordinal, shuffle=True)
    u_sampler = DistributedSampler(unlabeled, world, ordinal, shuffle=True)
    l_loader = DataLoader(labeled, batch_size=64, sampler=l_sampler, num_workers=2, drop_last=True)  # ok
    u_loader = DataLoader(unlabeled, batch_size=64 * MU, sampler=u_sampler, num_workers=8)  # expect: TPU306
    test_loader = DataLoader(test, batch_size=256, num_workers=2)  # ok

    model = WideResNet(depth=28, widen=2, num_classes=10).to(device)
    teacher = copy.deepcopy(model).eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 0.5 * (1 + torch.cos(torch.tensor(7 * 3.14159 * s / 16 / 2**20)).item())))  # ok (host scalar per step)

    l_iter = itertools.cycle(pl.MpDeviceLoader(l_loader, device))
    stats = {}
    for step, (x_w, x_s) in enumerate(pl.MpDeviceLoader(u_loader, device)):
        x_l, y_l = next(l_iter)
        loss = fixmatch_loss(model, x_l, y_l, x_w, x_s, stats)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        sched.step()
        ema_update(teacher, model)
        if step % 256 == 0:
            xm.add_step_closure(lambda l=loss, s=step: xm.master_print(f"step {s} loss {l.item():.4f}"))  # ok
        if step == flags["steps"]:
            break

    correct = torch.zeros((), device=device)
    for x, y in pl.MpDeviceLoader(test_loader, device):
        correct += (teacher(x).argmax(-1) == y).sum()  # ok
    total = xm.mesh_reduce("correct", correct.item(), sum)  # ok
    xm.master_print(f"test accuracy {total / len(test):.4f}")  # ok
    xm.mark_step()  # expect: TPU601


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=({"labels": 250, "steps": 2**20},), nprocs=8)  # expect: TPU706

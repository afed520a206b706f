"""MoCo v2 (momentum key encoder, 65536-key queue, shuffle-BN) moved from the CUDA DDP reference
to torch_xla with torch_xla.launch and the "xla" process group; half of the port is done."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, DistributedSampler

import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr


@torch.no_grad()
def concat_all_gather(tensor):
    gathered = [torch.ones_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor, async_op=False)
    return torch.cat(gathered, dim=0)


class MoCo(nn.Module):
    def __init__(self, dim=128, K=65536, m=0.999, T=0.2):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q = torchvision.models.resnet50(num_classes=dim)
        self.encoder_k = torchvision.models.resnet50(num_classes=dim)
        for q, k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            k.data.copy_(q.data)  # ok
            k.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(dim, K), dim=0))  # ok
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))  # ok

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        ptr = int(self.queue_ptr)  # expect: TPU106
        self.queue[:, ptr:ptr + keys.shape[0]] = keys.T  # expect: TPU3xx
        self.queue_ptr[0] = (ptr + keys.shape[0]) % self.K  # ok

    @torch.no_grad()
    def _batch_shuffle(self, x):
        x_all = concat_all_gather(x)
        idx_shuffle = torch.randperm(x_all.shape[0]).cuda()  # expect: TPU403
        dist.broadcast(idx_shuffle, src=0)
        idx_unshuffle = torch.argsort(idx_shuffle)
        this = idx_shuffle.view(dist.get_world_size(), -1)[dist.get_rank()]
        return x_all[this], idx_unshuffle

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                pk.data = pk.data * self.m + pq.data * (1.0 - self.m)  # ok
            im_k, idx_unshuffle = self._batch_shuffle(im_k)
            k = F.normalize(self.encoder_k(im_k), dim=1)
            k = concat_all_gather(k)[idx_unshuffle].view(-1, k.shape[1])[: q.shape[0]]  # ok
        l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)  # expect: TPU405
        self._dequeue_and_enqueue(k)
        return logits, labels


def _mp_fn(index, args):
    dist.init_process_group("xla", init_method="xla://")  # ok
    device = torch_xla.device()
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = True  # ok
    model = MoCo().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03 * args.batch_size * xr.world_size() / 256, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss().to(device)
    aug = torchvision.transforms.Compose([torchvision.transforms.RandomResizedCrop(224, scale=(0.2, 1.0)), torchvision.transforms.ToTensor()])
    dataset = torchvision.datasets.ImageFolder(args.data, transform=lambda img: (aug(img), aug(img)))
    sampler = DistributedSampler(dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=8, drop_last=True)  # ok
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for i, ((im_q, im_k), _) in enumerate(pl.MpDeviceLoader(loader, device)):
            logits, labels = model(im_q, im_k)
            loss = criterion(logits, labels)
            acc1 = (logits.argmax(1) == labels).float().mean() * 100
            optimizer.zero_grad()
            loss.backward()
            xm.optimizer_step(optimizer)
            if i % 10 == 0:
                xm.master_print(f"epoch {epoch} [{i}/{len(loader)}] loss {loss:.4f} acc@1 {acc1:.2f}")  # ok
        if xm.is_master_ordinal():
            torch.save(model.state_dict(), f"moco_v2_{epoch:04d}.pth")  # expect: TPU408


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=200)
    torch_xla.launch(_mp_fn, args=(parser.parse_args(),))

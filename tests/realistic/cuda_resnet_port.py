"""ImageNet ResNet-50 training script written for CUDA, being ported to a TPU."""
import argparse
import time

import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/datasets/imagenet")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--local_rank", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    dist.init_process_group(backend="nccl")  # expect: TPU701
    torch.cuda.set_device(args.local_rank)  # expect: TPU404
    cudnn.benchmark = True  # ok
    device = torch.device("cuda", args.local_rank)  # expect: TPU401

    model = torchvision.models.resnet50().cuda()  # expect: TPU403
    model = nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])  # ok
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    scaler = torch.cuda.amp.GradScaler()  # ok

    transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor()])
    dataset = torchvision.datasets.ImageFolder(f"{args.data}/train", transform)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=8, pin_memory=True)  # expect: TPU306

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        end = time.time()
        for i, (images, target) in enumerate(loader):
            images = images.cuda(non_blocking=True)  # expect: TPU403
            target = target.cuda(non_blocking=True)  # expect: TPU403
            with torch.autocast(device_type="cuda", dtype=torch.float16):  # expect: TPU504
                output = model(images)
                loss = criterion(output, target)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            torch.cuda.synchronize()  # expect: TPU404
            batch_time = time.time() - end
            end = time.time()
            if i % 100 == 0 and args.local_rank == 0:
                print(f"epoch {epoch} iter {i} loss {loss.item():.4f} time {batch_time:.3f}")  # ok
        if args.local_rank == 0:
            torch.save(model.module.state_dict(), f"resnet50_epoch{epoch}.pt")  # ok


if __name__ == "__main__":
    main()

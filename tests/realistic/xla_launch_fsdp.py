"""FSDP training on PyTorch/XLA with torch_xla.launch and the XLA process group."""
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader, DistributedSampler


def _mp_fn(index, config):
    dist.init_process_group("xla", init_method="xla://")  # ok
    device = torch_xla.device()
    world_size = xr.world_size()  # ok
    rank = xr.global_ordinal()  # ok
    from model import build_model, build_dataset

    model = FSDP(build_model(config).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    dataset = build_dataset(config)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    loader = pl.MpDeviceLoader(DataLoader(dataset, batch_size=config["batch_size"], sampler=sampler, drop_last=True), device)  # ok
    for epoch in range(config["epochs"]):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()  # ok
            optimizer.zero_grad()
            if step % 100 == 0:
                xm.add_step_closure(lambda loss=loss: print(f"rank {rank} loss {loss.item():.4f}"))  # ok
        xm.rendezvous("epoch_end")  # ok
        if rank == 0:
            print(f"epoch {epoch} done")  # ok
    xm.save(model.state_dict(), f"ckpt_rank{rank}.pt", master_only=False)  # ok
    state = model.state_dict()
    torch.save(state, f"raw_rank{rank}.pt")  # expect: TPUxxx


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=({"lr": 1e-4, "batch_size": 64, "epochs": 3},))  # ok

"""SPMD (GSPMD) sharded training of a decoder on PyTorch/XLA."""
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr

from model import Transformer


def shard_model(model, mesh):
    for name, param in model.named_parameters():
        if "attn.wq" in name or "mlp.up" in name:
            xs.mark_sharding(param, mesh, ("fsdp", "model"))  # expect: TPU703
        elif "mlp.down" in name:
            xs.mark_sharding(param, mesh, ("model", "fsdp"))  # ok


def main():
    device = torch_xla.device()
    warmup = torch.zeros(1, device=device)
    num_devices = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(num_devices), (num_devices // 4, 4), ("fsdp", "model"))
    model = Transformer(dim=4096, n_layers=32).to(device)
    shard_model(model, mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(1000):
        tokens = torch.randint(0, 32000, (16, 2048)).to(device)  # expect: TPU407
        xs.mark_sharding(tokens, mesh, ("fsdp", None))  # ok
        loss = model(tokens).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()  # ok
        if step % 50 == 0:
            print(f"step {step}")  # ok


if __name__ == "__main__":
    main()

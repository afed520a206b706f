"""Step-time benchmark for a model on PyTorch/XLA."""
import time

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met


def benchmark(model, batch, steps=50, warmup=5):
    device = torch_xla.device()
    model = model.to(device)
    batch = batch.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(warmup):
        model(batch).sum().backward()
        optimizer.step()
        torch_xla.sync()
    xm.wait_device_ops()

    start = time.perf_counter()
    for _ in range(steps):
        model(batch).sum().backward()
        optimizer.step()
        torch_xla.sync()
    naive = time.perf_counter() - start  # expect: TPU111

    start = time.perf_counter()
    for _ in range(steps):
        model(batch).sum().backward()
        optimizer.step()
        torch_xla.sync()
    xm.wait_device_ops()
    measured = time.perf_counter() - start  # ok

    print(f"naive {naive / steps * 1e3:.2f} ms/step, measured {measured / steps * 1e3:.2f} ms/step")
    print(met.short_metrics_report())  # ok
    return measured / steps

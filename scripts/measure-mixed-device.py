#!/usr/bin/env python3
"""Measures what torch_xla does when a CPU tensor meets an XLA tensor (the behaviour TPU405's
severities rest on): for each combination, whether it raises, and if not, how many host-to-device
transfers ten steps cost (torch_xla's `TransferToDeviceTime` metric count).

    python3 -m venv v && v/bin/pip install torch==2.9.0 torch-xla==2.9.0
    PJRT_DEVICE=CPU v/bin/python scripts/measure-mixed-device.py

Needs real torch_xla (the XLA CPU device is enough); the tests never run it. Results are recorded
in docs/precision.md, "TPU405 measured".
"""

import torch
import torch.nn as nn
import torch_xla
import torch_xla.debug.metrics as met

STEPS = 10


def transfers() -> int:
    data = met.metric_data("TransferToDeviceTime")
    return data[0] if data else 0


def run(name, step) -> None:
    torch_xla.sync()
    before = transfers()
    try:
        for i in range(STEPS):
            step(i)
            torch_xla.sync()
    except Exception as error:  # the op raising is the measurement
        print(f"{name:45} raises: {str(error).splitlines()[0][:90]}")
        return
    print(f"{name:45} ok, {transfers() - before} transfers in {STEPS} steps")


def inplace_slice(x, scalar):
    y = x.clone().view(-1)
    y[0:-1:5] *= scalar
    return y


def inplace_whole(x, scalar):
    y = x.clone()
    y *= scalar
    return y


def main() -> None:
    device = torch_xla.device()
    x = torch.randn(4, 4, device=device)
    embedding = nn.Embedding(16, 8).to(device)
    linear = nn.Linear(4, 4).to(device)
    dropout = nn.Dropout(0.1).to(device)
    cases = [
        ("x * 2 (baseline)", lambda i: x * 2),
        ("x + cpu(4, 4)", lambda i: x + torch.ones(4, 4)),
        ("x - cpu(4, 4)", lambda i: x - torch.ones(4, 4)),
        ("x.mul_(cpu(4, 4))", lambda i: x.clone().mul_(torch.ones(4, 4))),
        ("torch.add(x, cpu(4, 4))", lambda i: torch.add(x, torch.ones(4, 4))),
        ("x.add(cpu(4, 4))", lambda i: x.add(torch.ones(4, 4))),
        ("x + torch.tensor(0.5)", lambda i: x + torch.tensor(0.5)),
        ("x * torch.tensor(float(i)) (changing value)", lambda i: x * torch.tensor(float(i))),
        ("torch.tensor(0.5, dtype=x.dtype) * x", lambda i: torch.tensor(0.5, dtype=x.dtype) * x),
        ("x.clone()[0:-1:5] *= torch.tensor(2)", lambda i: inplace_slice(x, torch.tensor(2))),
        ("x.clone() *= torch.tensor(2)", lambda i: inplace_whole(x, torch.tensor(2))),
        ("x > torch.tensor(0.0)", lambda i: x > torch.tensor(0.0)),
        ("x >= cpu(4, 4)", lambda i: x >= torch.ones(4, 4)),
        ("x @ cpu(4, 4)", lambda i: x @ torch.ones(4, 4)),
        ("torch.matmul(x, cpu(4, 4))", lambda i: torch.matmul(x, torch.ones(4, 4))),
        ("x.maximum(cpu(4, 4))", lambda i: x.maximum(torch.ones(4, 4))),
        ("torch.minimum(x, torch.tensor(1e10))", lambda i: torch.minimum(x, torch.tensor(1e10))),
        ("x.lerp(cpu(4, 4), 0.5)", lambda i: x.lerp(torch.ones(4, 4), 0.5)),
        ("x.lerp(y, torch.tensor(0.5))", lambda i: x.lerp(x * 2, torch.tensor(0.5))),
        ("torch.cat([x, cpu(4, 4)])", lambda i: torch.cat([x, torch.ones(4, 4)])),
        ("torch.stack([x[0, 0], torch.tensor(1.0)])", lambda i: torch.stack([x[0, 0], torch.tensor(1.0)])),
        ("torch.where(cpu mask, x, 0.0)", lambda i: torch.where(torch.ones(4, 4) > 0, x, 0.0)),
        ("torch.where(x > 0, x, torch.tensor(0.0))", lambda i: torch.where(x > 0, x, torch.tensor(0.0))),
        ("x.masked_fill(cpu mask, 0.0)", lambda i: x.masked_fill(torch.ones(4, 4).tril() == 0, 0.0)),
        ("x.masked_fill(x > 0, torch.tensor(finfo.min))",
         lambda i: x.masked_fill(x > 0, torch.tensor(torch.finfo(x.dtype).min))),
        ("x.index_select(0, cpu index)", lambda i: x.index_select(0, torch.arange(2))),
        ("x.gather(1, cpu index)", lambda i: x.gather(1, torch.zeros(4, 1, dtype=torch.long))),
        ("x.scatter(1, cpu index, 1.0)", lambda i: x.scatter(1, torch.zeros(4, 1, dtype=torch.long), 1.0)),
        ("embedding(cpu arange)", lambda i: embedding(torch.arange(4))),
        ("linear(cpu(4, 4))", lambda i: linear(torch.ones(4, 4))),
        ("dropout(cpu(4, 4))", lambda i: dropout(torch.ones(4, 4))),
    ]
    for name, step in cases:
        run(name, step)


if __name__ == "__main__":
    main()

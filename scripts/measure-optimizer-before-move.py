#!/usr/bin/env python3
"""Measures what happens on torch_xla when an optimizer is built before its model is moved to the
XLA device (the behaviour TPU409 rests on): whether the parameters stay the same objects, where
the optimizer's parameters are, and whether `step()` changes the model's weights.

    python3 -m venv v && v/bin/pip install torch==2.9.0 torch-xla==2.9.0
    PJRT_DEVICE=CPU v/bin/python scripts/measure-optimizer-before-move.py

Needs real torch_xla (the XLA CPU device is enough); the tests never run it. Results are recorded
in docs/precision.md, "TPU409 measured".
"""

import torch, torch.nn as nn, torch_xla
dev = torch_xla.device()
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
before = [id(p) for p in model.parameters()]
model.to(dev)
after = [id(p) for p in model.parameters()]
print("same Parameter objects after .to(xla):", before == after)
print("optimizer param device:", opt.param_groups[0]["params"][0].device)
x = torch.randn(8, 4, device=dev)
w0 = model.weight.detach().cpu().clone()
loss = model(x).sum(); loss.backward(); opt.step(); torch_xla.sync()
print("model weight changed by opt.step():", not torch.equal(w0, model.weight.detach().cpu()))
print("grad of optimizer's param:", opt.param_groups[0]["params"][0].grad)
# the same with the model moved first
model2 = nn.Linear(4, 2).to(dev); opt2 = torch.optim.SGD(model2.parameters(), lr=0.1)
w0 = model2.weight.detach().cpu().clone(); model2(x).sum().backward(); opt2.step(); torch_xla.sync()
print("moved first: weight changed:", not torch.equal(w0, model2.weight.detach().cpu()))
print("torch.__future__ overwrite:", torch.__future__.get_overwrite_module_params_on_conversion())
# a round trip through the CPU (a checkpoint saved from `model.cpu()`) after the optimizer was built
model3 = nn.Linear(4, 2).to(dev); opt3 = torch.optim.SGD(model3.parameters(), lr=0.1)
model3.cpu(); model3.to(dev)
w0 = model3.weight.detach().cpu().clone(); model3(x).sum().backward(); opt3.step(); torch_xla.sync()
print("after .cpu() then .to(xla): weight changed:", not torch.equal(w0, model3.weight.detach().cpu()))

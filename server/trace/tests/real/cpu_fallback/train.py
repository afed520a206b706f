"""Selects the positive scores with `torch.nonzero`, which has no XLA lowering: it runs on the CPU."""
import torch
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(6):
    x = torch.randn(16, 8, device=device)
    scores = model(x).squeeze(1)
    positive = torch.nonzero(scores > 0).squeeze(1)
    loss = scores.index_select(0, positive).sum() + scores.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    torch_xla.sync()

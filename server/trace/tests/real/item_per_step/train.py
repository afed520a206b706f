"""Logs the loss with `.item()` every step: one extra execution per step."""
import torch
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(6):
    x = torch.randn(16, 8, device=device)
    y = torch.randn(16, 1, device=device)
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
    torch_xla.sync()

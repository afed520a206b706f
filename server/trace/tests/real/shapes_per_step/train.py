"""The batch grows every step (a variable-length input): a new graph at every sync."""
import torch
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for step in range(6):
    batch = 4 + step
    x = torch.randn(batch, 8, device=device)
    y = torch.randn(batch, 1, device=device)
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()

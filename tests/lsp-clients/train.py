import torch
import torch_xla

device = torch.device("cuda")
model = torch.nn.Linear(4, 4)

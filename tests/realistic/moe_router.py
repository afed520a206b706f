"""A top-2 mixture-of-experts layer with capacity-based token dispatch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden)
        self.w2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)))


class MoELayer(nn.Module):
    def __init__(self, d=1024, hidden=4096, num_experts=8, capacity_factor=1.25):
        super().__init__()
        self.gate = nn.Linear(d, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d, hidden) for _ in range(num_experts)])
        self.num_experts = num_experts
        self.capacity_factor = capacity_factor

    def forward(self, x):
        b, s, d = x.shape
        tokens = x.reshape(-1, d)
        probs = F.softmax(self.gate(tokens), dim=-1)
        weights, chosen = probs.topk(2, dim=-1)  # ok
        out = torch.zeros_like(tokens)  # ok
        load = torch.bincount(chosen.flatten(), minlength=self.num_experts)  # expect: TPU304
        capacity = int(load.max().item() * self.capacity_factor)  # expect: TPU101|TPU106
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(chosen == e)  # expect: TPU301
            routed = (chosen == e).nonzero(as_tuple=True)[0]  # expect: TPU301
            if routed.numel() == 0:  # debatable
                continue
            buffer = torch.zeros(routed.size(0), d, device=x.device)  # expect: TPU309
            buffer += tokens[routed]
            out.index_add_(0, routed, weights[routed, slot[: routed.numel()], None] * expert(buffer))  # ok
        aux_loss = (load.float() / tokens.size(0) * probs.mean(0)).sum() * self.num_experts
        self.last_capacity = capacity
        return out.reshape(b, s, d), aux_loss


class DenseMoELayer(MoELayer):
    """The static-shape alternative: every expert sees every token, masked by the gate."""

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        weights, chosen = probs.topk(2, dim=-1)
        mask = F.one_hot(chosen, self.num_experts).sum(-2).to(x.dtype)  # ok
        gated = torch.stack([expert(x) for expert in self.experts], dim=-2)
        return (gated * (mask * probs).unsqueeze(-1)).sum(-2), probs.new_zeros(())  # ok

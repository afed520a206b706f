"""Physics-informed neural network for the 1-D viscous Burgers equation (Raissi et al.): an MLP
u(t, x) fitted to initial/boundary data and to the PDE residual at collocation points resampled
every step, Adam first and L-BFGS to finish. Written for GPUs in float64, as PINN codes usually
are, and moved to a TPU VM with torch_xla."""
import time

import numpy as np
import scipy.io
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

torch.set_default_dtype(torch.float64)  # expect: TPU501
NU = 0.01 / np.pi


class MLP(nn.Module):
    def __init__(self, widths, lb, ub):
        super().__init__()
        self.lb, self.ub = torch.tensor(lb), torch.tensor(ub)  # debatable (float64 host bounds; the error is at the use)
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        for lin in self.linears:
            nn.init.xavier_normal_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, t, x):
        h = torch.cat([t, x], dim=1)
        h = 2.0 * (h - self.lb) / (self.ub - self.lb) - 1.0  # expect: TPU405
        for lin in self.linears[:-1]:
            h = torch.tanh(lin(h))
        return self.linears[-1](h)


def pde_residual(model, t, x):
    u = model(t, x)
    u_t, u_x = torch.autograd.grad(u, (t, x), torch.ones_like(u), create_graph=True)  # ok
    u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x), create_graph=True)[0]  # ok
    return u_t + u * u_x - NU * u_xx


def main():
    device = torch_xla.device()
    data = scipy.io.loadmat("burgers_shock.mat")
    t, x = data["t"].flatten()[:, None], data["x"].flatten()[:, None]
    exact = np.real(data["usol"]).T
    X, T = np.meshgrid(x, t)
    X_star = np.hstack((T.flatten()[:, None], X.flatten()[:, None]))
    u_star = exact.flatten()[:, None]
    lb, ub = X_star.min(0), X_star.max(0)

    idx = np.random.choice(X_star.shape[0], 100, replace=False)
    X_u = torch.tensor(X_star[idx], device=device)  # expect: TPU502
    u_train = torch.tensor(u_star[idx], device=device)  # expect: TPU502

    model = MLP([2] + [20] * 8 + [1], lb, ub).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for it in range(20_000):
        t_f = torch.rand(10_000, 1).to(device).requires_grad_()  # expect: TPU407
        x_f = (2 * torch.rand(10_000, 1) - 1).to(device).requires_grad_()  # expect: TPU407
        loss_u = ((model(X_u[:, :1], X_u[:, 1:]) - u_train) ** 2).mean()
        loss_f = (pde_residual(model, t_f, x_f) ** 2).mean()
        loss = loss_u + loss_f
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()  # expect: TPU601
        if it % 1000 == 0:
            print(f"it {it}: loss_u {loss_u.item():.3e} loss_f {loss_f.item():.3e}")  # ok
    print(f"Adam phase took {time.perf_counter() - start:.1f}s")  # ok (read back every 1000 steps)

    t_f = torch.rand(10_000, 1, device=device).requires_grad_()  # ok
    x_f = (2 * torch.rand(10_000, 1, device=device) - 1).requires_grad_()  # ok
    lbfgs = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=50_000, tolerance_grad=1e-9, line_search_fn="strong_wolfe")

    def closure():
        lbfgs.zero_grad()
        loss = ((model(X_u[:, :1], X_u[:, 1:]) - u_train) ** 2).mean() + (pde_residual(model, t_f, x_f) ** 2).mean()
        loss.backward()
        return loss

    lbfgs.step(closure)
    with torch.no_grad():
        Xs = torch.from_numpy(X_star).to(device)  # expect: TPU502
        u_pred = model(Xs[:, :1], Xs[:, 1:]).cpu().numpy()  # ok
    err = np.linalg.norm(u_star - u_pred, 2) / np.linalg.norm(u_star, 2)
    print(f"relative L2 error {err:.3e}")  # ok
    torch.save(model.state_dict(), "pinn_burgers.pt")  # expect: TPU408


if __name__ == "__main__":
    main()

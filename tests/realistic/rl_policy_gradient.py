"""REINFORCE with a replay buffer; the policy and the buffer live on the accelerator."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Policy(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh(), nn.Linear(hidden, n_actions))

    def forward(self, obs):
        return F.softmax(self.net(obs), dim=-1)


class ReplayBuffer:
    def __init__(self, capacity, obs_dim, device):
        self.obs = torch.zeros(capacity, obs_dim, device=device)  # ok
        self.returns = torch.zeros(capacity, device=device)  # ok
        self.size = torch.zeros((), dtype=torch.long, device=device)
        self.device = device
        self.rng = torch.Generator(device="cpu").manual_seed(0)

    def sample(self, batch_size):
        n = int(self.size.item())  # expect: TPU101|TPU106
        idx = torch.randperm(n, device=self.device, dtype=torch.int32)  # expect: TPU216
        return self.obs[idx[:batch_size]], self.returns[idx[:batch_size]]


def train(policy, env, optimizer, device, episodes=1000, gamma=0.99):
    buffer = ReplayBuffer(100_000, env.observation_space.shape[0], device)
    for episode in range(episodes):
        obs = torch.as_tensor(env.reset(), device=device)
        rewards, log_probs = [], []
        done = False
        while not done:
            probs = policy(obs)
            action = torch.multinomial(probs, 1)  # ok
            log_probs.append(torch.log(probs[action]))
            obs_np, reward, done, _ = env.step(action.item())  # debatable
            obs = torch.as_tensor(obs_np, device=device)
            rewards.append(reward)
        returns = torch.tensor([sum(gamma ** k * r for k, r in enumerate(rewards[i:])) for i in range(len(rewards))], device=device)  # ok
        loss = -(torch.stack(log_probs).squeeze() * returns).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        candidates = torch.multinomial(torch.softmax(returns, 0), 4)  # expect: TPU208
        noise = torch.randn(returns.shape, generator=buffer.rng).to(device)  # ok
        for _ in range(int(returns.max().item())):  # expect: TPU109|TPU101
            batch_obs, batch_returns = buffer.sample(256)

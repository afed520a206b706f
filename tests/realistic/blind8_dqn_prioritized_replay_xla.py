"""DQN on Atari Breakout with prioritized experience replay (proportional, sum-tree free: the
priorities live in a NumPy array), epsilon-greedy acting, a target network and a Huber TD loss.
A CleanRL-style single-file script moved to one TPU v4 chip with torch_xla; the vectorised
environments step on the host."""
import argparse
import random
import time

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.tensorboard import SummaryWriter

from atari_wrappers import make_env


class QNetwork(nn.Module):
    def __init__(self, n_actions):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(),
            nn.Linear(512, n_actions),
        )

    def forward(self, x):
        return self.net(x / 255.0)  # ok


class PrioritizedReplay:
    def __init__(self, capacity, obs_shape, alpha=0.6):
        self.obs = np.zeros((capacity, *obs_shape), dtype=np.uint8)
        self.next_obs = np.zeros((capacity, *obs_shape), dtype=np.uint8)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=np.float32)
        self.priorities = np.zeros(capacity)
        self.alpha, self.capacity, self.pos, self.full = alpha, capacity, 0, False

    def add(self, o, no, a, r, d):
        self.obs[self.pos], self.next_obs[self.pos] = o, no
        self.actions[self.pos], self.rewards[self.pos], self.dones[self.pos] = a, r, d
        self.priorities[self.pos] = self.priorities.max() if self.full or self.pos else 1.0  # ok
        self.pos = (self.pos + 1) % self.capacity
        self.full = self.full or self.pos == 0

    def sample(self, batch_size, beta, device):
        hi = self.capacity if self.full else self.pos
        probs = self.priorities[:hi] ** self.alpha
        probs /= probs.sum()
        idx = np.random.choice(hi, batch_size, p=probs)
        weights = (hi * probs[idx]) ** (-beta)
        weights /= weights.max()
        return (
            torch.from_numpy(self.obs[idx]).to(device),  # ok
            torch.from_numpy(self.next_obs[idx]).to(device),  # ok
            torch.from_numpy(self.actions[idx]).to(device),  # ok
            torch.from_numpy(self.rewards[idx]).to(device),  # ok
            torch.from_numpy(self.dones[idx]).to(device),  # ok
            torch.from_numpy(weights).to(device),  # expect: TPU502
            idx,
        )


def linear_schedule(start, end, duration, t):
    return max(end, start + (end - start) * t / duration)  # ok


def main():
    args = argparse.Namespace(env_id="BreakoutNoFrameskip-v4", total_timesteps=10_000_000, batch_size=32, gamma=0.99)

    device = xm.xla_device()  # expect: TPU602
    envs = gym.vector.SyncVectorEnv([make_env(args.env_id, 1 + i) for i in range(8)])
    n_actions = envs.single_action_space.n
    q_network = QNetwork(n_actions).to(device)
    optimizer = torch.optim.Adam(q_network.parameters(), lr=1e-4, eps=1.5e-4)
    target_network = QNetwork(n_actions).to(device)
    target_network.load_state_dict(q_network.state_dict())
    rb = PrioritizedReplay(1_000_000, envs.single_observation_space.shape)
    writer = SummaryWriter(f"runs/{args.env_id}_per")

    obs, _ = envs.reset(seed=1)
    start = time.time()
    for global_step in range(args.total_timesteps):
        epsilon = linear_schedule(1.0, 0.01, 0.1 * args.total_timesteps, global_step)
        if random.random() < epsilon:
            actions = np.array([envs.single_action_space.sample() for _ in range(envs.num_envs)])  # ok
        else:
            q_values = q_network(torch.Tensor(obs).to(device))  # ok
            actions = torch.argmax(q_values, dim=1).cpu().numpy()  # debatable (acting needs host actions)
        next_obs, rewards, terms, truncs, infos = envs.step(actions)
        for info in infos.get("final_info", []) or []:
            if info and "episode" in info:
                writer.add_scalar("charts/episodic_return", info["episode"]["r"], global_step)  # ok
        for i in range(envs.num_envs):
            rb.add(obs[i], next_obs[i], actions[i], rewards[i], terms[i])
        obs = next_obs

        if global_step > 80_000 and global_step % 4 == 0:
            beta = linear_schedule(0.4, 1.0, args.total_timesteps, global_step)
            b_obs, b_next, b_act, b_rew, b_done, b_w, idx = rb.sample(args.batch_size, beta, device)
            with torch.no_grad():
                next_actions = q_network(b_next).argmax(dim=1, keepdim=True)
                target_q = target_network(b_next).gather(1, next_actions).squeeze(1)
                td_target = b_rew + args.gamma * target_q * (1 - b_done)  # ok
            old_val = q_network(b_obs).gather(1, b_act.unsqueeze(1)).squeeze(1)
            td_error = td_target - old_val
            loss = (b_w * F.smooth_l1_loss(old_val, td_target, reduction="none")).mean()
            rb.priorities[idx] = td_error.abs().detach().cpu().numpy() + 1e-6  # expect: TPU102
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch_xla.sync()
            if global_step % 1000 == 0:
                writer.add_scalar("losses/td_loss", loss, global_step)  # ok
                writer.add_scalar("charts/SPS", int(global_step / (time.time() - start)), global_step)  # ok
            if global_step % 8000 == 0:
                target_network.load_state_dict(q_network.state_dict())  # ok

    torch.save(q_network.state_dict(), f"runs/{args.env_id}_per/dqn.pt")  # expect: TPU408
    envs.close()


if __name__ == "__main__":
    main()

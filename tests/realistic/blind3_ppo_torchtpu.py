"""PPO on a vectorised Gymnasium environment with the policy on a TPU through TorchTPU; the update step is compiled."""
import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical

import torch_tpu  # noqa: F401

device = torch.device("tpu")  # ok
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)  # debatable (silently ignored without CUDA; torch.manual_seed above already seeds)
NUM_ENVS, ROLLOUT, EPOCHS, MINIBATCH = 16, 256, 4, 512
GAMMA, LAM, CLIP, TARGET_KL = 0.99, 0.95, 0.2, 0.02


class ActorCritic(nn.Module):
    def __init__(self, obs_dim, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh())
        self.pi = nn.Linear(256, n_actions)
        self.v = nn.Linear(256, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


envs = gym.vector.SyncVectorEnv([lambda: gym.make("LunarLander-v3") for _ in range(NUM_ENVS)])
policy = ActorCritic(envs.single_observation_space.shape[0], envs.single_action_space.n).to(device)
optimizer = torch.optim.Adam(policy.parameters(), lr=2.5e-4, eps=1e-5)  # expect: TPU608


@torch.compile(backend="tpu")  # expect: TPU604
def ppo_loss(obs, actions, old_logp, adv, ret):
    logits, value = policy(obs)
    dist = Categorical(logits=logits)
    logp = dist.log_prob(actions)
    ratio = (logp - old_logp).exp()
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(1 - CLIP, 1 + CLIP)).mean()
    loss = pg + 0.5 * (value - ret).pow(2).mean() - 0.01 * dist.entropy().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.detach(), ((ratio - 1) - ratio.log()).mean().detach()


def compute_gae(rewards, values, dones, last_value):
    advantages = np.zeros_like(rewards)
    gae = 0.0
    for t in reversed(range(len(rewards))):
        next_value = last_value if t == len(rewards) - 1 else values[t + 1]
        delta = rewards[t] + GAMMA * next_value * (1 - dones[t]) - values[t]  # ok
        gae = delta + GAMMA * LAM * (1 - dones[t]) * gae
        advantages[t] = gae
    return advantages, advantages + values


obs, _ = envs.reset(seed=0)
for iteration in range(1000):
    buf_obs, buf_act, buf_logp = [], [], []
    rewards = np.zeros((ROLLOUT, NUM_ENVS))
    dones = np.zeros((ROLLOUT, NUM_ENVS))
    values = np.zeros((ROLLOUT, NUM_ENVS))
    for t in range(ROLLOUT):
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=device)  # ok
        with torch.no_grad():
            logits, value = policy(obs_t)
        dist = Categorical(logits=logits)
        action = dist.sample()
        buf_obs.append(obs_t)
        buf_act.append(action)
        buf_logp.append(dist.log_prob(action))
        obs, reward, term, trunc, _ = envs.step(action.cpu().numpy())  # ok
        rewards[t], dones[t], values[t] = reward, term | trunc, value.cpu().numpy()  # ok
    with torch.no_grad():
        _, last_value = policy(torch.as_tensor(obs, dtype=torch.float32, device=device))
    adv, ret = compute_gae(rewards, values, dones, last_value.cpu().numpy())  # ok
    b_obs = torch.cat(buf_obs)
    b_act, b_logp = torch.cat(buf_act), torch.cat(buf_logp)
    b_adv = torch.tensor(adv.reshape(-1), device=device)  # expect: TPU502
    b_ret = torch.tensor(ret.reshape(-1), dtype=torch.float32, device=device)  # ok
    for epoch in range(EPOCHS):
        perm = torch.randperm(b_obs.size(0))  # ok
        for start in range(0, b_obs.size(0), MINIBATCH):
            idx = perm[start:start + MINIBATCH]
            loss, approx_kl = ppo_loss(b_obs[idx], b_act[idx], b_logp[idx], b_adv[idx], b_ret[idx])
            if approx_kl > TARGET_KL:  # expect: TPU107
                break
    if iteration % 10 == 0:
        print(f"iter {iteration}: loss {loss.item():.3f} kl {approx_kl.item():.4f} return {rewards.sum(0).mean():.1f}")  # ok

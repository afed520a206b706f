# PPO on Procgen (cleanrl-style single file) moved from a GPU box to a TorchTPU v6e host.
# Rollouts on the host (gym vector env), the update on the TPU, GAE computed on device.
import argparse
import time

import gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical
from torch.utils.tensorboard import SummaryWriter


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(3, 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(), nn.Flatten(),
            layer_init(nn.Linear(64 * 4 * 4, 256)), nn.ReLU())
        self.actor = layer_init(nn.Linear(256, n_actions), std=0.01)
        self.critic = layer_init(nn.Linear(256, 1), std=1)

    def get_action_and_value(self, x, action=None):
        hidden = self.network(x.permute(0, 3, 1, 2) / 255.0)
        probs = Categorical(logits=self.actor(hidden))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--env-id", default="procgen-starpilot-v0")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--num-steps", type=int, default=256)
    p.add_argument("--total-timesteps", type=int, default=25_000_000)
    p.add_argument("--update-epochs", type=int, default=3)
    p.add_argument("--minibatches", type=int, default=8)
    args = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: TPU402
    writer = SummaryWriter(f"runs/{args.env_id}_{int(time.time())}")
    envs = gym.vector.make(args.env_id, num_envs=args.num_envs)
    agent = Agent(envs.single_action_space.n).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=5e-4, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs) + envs.single_observation_space.shape).to(device)  # expect: TPU407
    actions = torch.zeros((args.num_steps, args.num_envs), device=device)  # ok
    logprobs = torch.zeros((args.num_steps, args.num_envs), device=device)  # ok
    rewards = torch.zeros((args.num_steps, args.num_envs), device=device)  # ok
    dones = torch.zeros((args.num_steps, args.num_envs), device=device)  # ok
    values = torch.zeros((args.num_steps, args.num_envs), device=device)  # ok

    next_obs = torch.Tensor(envs.reset()).to(device)  # ok
    next_done = torch.zeros(args.num_envs, device=device)  # ok
    global_step = 0
    for update in range(args.total_timesteps // (args.num_envs * args.num_steps)):
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            nobs, reward, done, info = envs.step(action.cpu().numpy())  # debatable (the environment acts on host actions)
            rewards[step] = torch.tensor(reward).to(device).view(-1)  # debatable (float64 rewards moved, then cast by the copy)
            next_obs, next_done = torch.Tensor(nobs).to(device), torch.Tensor(done).to(device)  # ok
            for item in info:
                if "episode" in item.keys():
                    writer.add_scalar("charts/episodic_return", item["episode"]["r"], global_step)  # ok

        with torch.no_grad():
            next_value = agent.get_action_and_value(next_obs)[3].reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])  # debatable (an eager index by the counter on TorchTPU)
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]  # debatable (an eager index by the counter on TorchTPU)
                delta = rewards[t] + 0.999 * nextvalues * nextnonterminal - values[t]  # debatable (an eager index by the counter on TorchTPU)
                advantages[t] = lastgaelam = delta + 0.999 * 0.95 * nextnonterminal * lastgaelam  # debatable (an eager index by the counter on TorchTPU)
            returns = advantages + values

        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_adv, b_ret = advantages.reshape(-1), returns.reshape(-1)
        batch = args.num_envs * args.num_steps
        mb = batch // args.minibatches
        for epoch in range(args.update_epochs):
            idx = np.random.permutation(batch)
            for start in range(0, batch, mb):
                mb_idx = idx[start:start + mb]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_idx], b_actions.long()[mb_idx])
                ratio = (newlogprob - b_logprobs[mb_idx]).exp()
                adv = b_adv[mb_idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_ret[mb_idx]) ** 2).mean()
                loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
                approx_kl = ((ratio - 1) - ratio.log()).mean()
                if approx_kl > 0.015:  # expect: TPU107
                    break
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)  # ok (once per update; the rollout reads actions back every env step anyway)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)  # ok


if __name__ == "__main__":
    main()

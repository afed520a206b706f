"""Reward model for RLHF: a 410M decoder with a scalar head trained on chosen/rejected pairs
(Bradley-Terry loss), pairwise accuracy logged during training and on a held-out split.
Moved from an 8xA100 torchrun job to a TPU v5e-8 with TorchTPU, eager mode."""
import argparse
import json

import torch
import torch.distributed as dist
import torch.nn.functional as F
import wandb
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_cosine_schedule_with_warmup

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="EleutherAI/pythia-410m")
parser.add_argument("--data", default="hh_rlhf_pairs.jsonl")
parser.add_argument("--seed", type=int, default=17)
args = parser.parse_args()

dist.init_process_group(backend="nccl")  # expect: TPU701
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("tpu")
torch.manual_seed(args.seed)
torch.cuda.manual_seed_all(args.seed)  # expect: TPU404

tok = AutoTokenizer.from_pretrained(args.model)
tok.pad_token = tok.eos_token


def collate(rows):
    texts = [r["prompt"] + r["chosen"] for r in rows] + [r["prompt"] + r["rejected"] for r in rows]
    return tok(texts, padding="max_length", max_length=512, truncation=True, return_tensors="pt")  # ok


with open(args.data) as f:
    pairs = [json.loads(line) for line in f]
train, held_out = pairs[:-2000], pairs[-2000:]
train_sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True)
train_loader = DataLoader(train, batch_size=8, sampler=train_sampler, collate_fn=collate, drop_last=True)  # ok
eval_loader = DataLoader(held_out, batch_size=16, sampler=DistributedSampler(held_out, shuffle=False), collate_fn=collate, drop_last=True)  # ok

model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=1, torch_dtype=torch.bfloat16)
model.config.pad_token_id = tok.pad_token_id
model = DDP(model.to(device))  # ok
optimizer = torch.optim.AdamW(model.parameters(), lr=9e-6, weight_decay=0.0)
scheduler = get_cosine_schedule_with_warmup(optimizer, 100, len(train_loader))
if rank == 0:
    wandb.init(project="reward-model", config=vars(args))  # ok

margins = []
correct = torch.zeros((), device=device)
for step, enc in enumerate(train_loader):
    enc = {k: v.to(device) for k, v in enc.items()}
    rewards = model(**enc).logits.squeeze(-1).float()
    r_chosen, r_rejected = rewards.chunk(2)
    loss = -F.logsigmoid(r_chosen - r_rejected).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
    optimizer.step()
    scheduler.step()
    correct += (r_chosen > r_rejected).sum()  # ok
    margins.extend((r_chosen - r_rejected).detach().cpu().tolist())  # expect: TPU102
    if rank == 0 and step % 20 == 0:
        acc = (r_chosen > r_rejected).float().mean()
        print(f"step {step} loss {loss.item():.4f} acc {acc.item():.3f}")  # expect: TPU110
        wandb.log({"train/loss": loss, "train/acc": acc, "lr": scheduler.get_last_lr()[0]}, step=step)  # expect: TPU110|TPU104

dist.all_reduce(correct)  # ok
train_acc = correct.item() / (len(train_sampler) * world)  # ok
model.eval()
hits = torch.zeros((), device=device)
with torch.no_grad():
    for enc in eval_loader:
        rewards = model(**{k: v.to(device) for k, v in enc.items()}).logits.squeeze(-1)
        r_chosen, r_rejected = rewards.chunk(2)
        hits += (r_chosen > r_rejected).sum()  # ok
dist.all_reduce(hits)  # ok
eval_acc = hits.item() / len(held_out)  # ok
if rank == 0:
    print(f"train acc {train_acc:.3f} held-out acc {eval_acc:.3f} mean margin {sum(margins) / len(margins):.3f}")  # ok
    wandb.log({"eval/acc": eval_acc, "train/acc_epoch": train_acc})  # ok
    torch.save(model.module.state_dict(), "reward_model.pt")  # expect: TPU110
dist.destroy_process_group()

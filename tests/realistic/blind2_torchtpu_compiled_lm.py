"""Fine-tune a causal LM on TorchTPU: DDP over the slice, a torch.compile'd train step, compiled scoring."""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from datasets import load_from_disk
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForCausalLM

import torch_tpu  # noqa: F401


def main(model_name="Qwen/Qwen2.5-0.5B", data_dir="/data/tokenized", steps=2000):
    dist.init_process_group(backend="xla", init_method="xla://")  # expect: TPU707
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu")  # ok
    model = AutoModelForCausalLM.from_pretrained(model_name, torch_dtype=torch.bfloat16).to(device)  # ok
    model = DDP(model, device_ids=[rank % 4])  # expect: TPU702
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.1)  # expect: TPU608
    sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 100))

    ds = load_from_disk(data_dir).with_format("torch")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, drop_last=True)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True, num_workers=4)  # ok

    @torch.compile(backend="tpu")  # expect: TPU604
    def train_step(input_ids, attention_mask):
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
        loss = F.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)).float(), input_ids[:, 1:].reshape(-1), reduction="none"
        )
        loss = (loss * attention_mask[:, 1:].reshape(-1)).sum() / attention_mask[:, 1:].sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    @torch.inference_mode()  # expect: TPU609
    @torch.compile(backend="tpu", dynamic=False)
    def score(input_ids):
        return model.module(input_ids=input_ids).logits.log_softmax(dim=-1)

    @torch.no_grad()  # ok
    @torch.compile(backend="tpu", dynamic=False)
    def score_ok(input_ids):
        return model.module(input_ids=input_ids).logits.log_softmax(dim=-1)

    running = torch.zeros((), device=device)  # ok
    for step, batch in enumerate(loader):
        input_ids = batch["input_ids"].to(device)
        attention_mask = batch["attention_mask"].to(device)
        loss = train_step(input_ids, attention_mask)
        sched.step()
        running += loss.detach()  # ok
        if rank == 0 and step % 50 == 0:
            print(f"step {step}: loss {loss.item():.4f}")  # expect: TPU110|TPU101|TPU103
        if step % 500 == 0:
            mean_loss = (running / 500).item()  # ok
            running.zero_()
            if rank == 0:
                print(f"step {step}: mean loss {mean_loss:.4f}")  # ok
        if step == steps:
            break
    state = {k: v.cpu() for k, v in model.module.state_dict().items()}  # ok
    if rank == 0:
        torch.save(state, os.path.join("/tmp", "final.pt"))  # ok
        torch.save(model.module.state_dict(), "/tmp/final_device.pt")  # expect: TPU110
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

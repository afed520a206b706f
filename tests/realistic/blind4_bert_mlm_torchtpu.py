"""BERT masked-language-model pretraining with dynamic masking, ported from a CUDA DDP script to
TorchTPU (one process per chip, launched with torchrun)."""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from datasets import load_dataset
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

import torch_tpu  # noqa: F401

MASK_PROB = 0.15
tokenizer = BertTokenizerFast.from_pretrained("bert-base-uncased")


def mask_tokens(input_ids, special_mask):
    labels = input_ids.clone()
    probability = torch.full(labels.shape, MASK_PROB)  # ok
    probability.masked_fill_(special_mask, 0.0)
    masked = torch.bernoulli(probability).bool()  # ok
    labels[~masked] = -100  # ok
    replace = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked
    input_ids[replace] = tokenizer.mask_token_id  # ok
    random_words = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked & ~replace
    input_ids[random_words] = torch.randint(len(tokenizer), labels.shape)[random_words]  # ok
    return input_ids, labels


def collate(examples):
    enc = tokenizer([e["text"] for e in examples], truncation=True, max_length=512, padding=True,  # expect: TPU307
                    return_special_tokens_mask=True, return_tensors="pt")
    input_ids, labels = mask_tokens(enc["input_ids"], enc["special_tokens_mask"].bool())
    return {"input_ids": input_ids, "attention_mask": enc["attention_mask"], "labels": labels}


def main():
    dist.init_process_group(backend="nccl")  # expect: TPU701
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu")
    model = BertForMaskedLM(BertConfig()).to(device)
    model = DDP(model, device_ids=[int(os.environ["LOCAL_RANK"])])  # expect: TPU702
    model = torch.compile(model, backend="tpu")  # expect: TPU604
    dataset = load_dataset("wikipedia", "20220301.en", split="train")
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, collate_fn=collate, num_workers=4)  # expect: TPU306
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)  # ok
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-4, total_steps=100_000)
    model.train()
    for step, batch in enumerate(loader):
        batch = {k: v.to(device) for k, v in batch.items()}
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        loss = F.cross_entropy(out.logits.view(-1, out.logits.size(-1)), batch["labels"].view(-1), ignore_index=-100)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            is_masked = batch["labels"] != -100
            mlm_acc = (out.logits.argmax(-1)[is_masked] == batch["labels"][is_masked]).float().mean()  # expect: TPU302
        if step % 200 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} mlm acc {mlm_acc.item():.3f}")  # expect: TPU110
        if step % 10_000 == 0:
            state = {k: v.cpu() for k, v in model.state_dict().items()}  # ok
            if rank == 0:
                torch.save(state, f"bert-mlm-{step}.pt")  # ok
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Fine-tune flan-t5-base for summarization with DDP on TorchTPU (one process per chip, launched
with torchrun after the singlehost wrapper). The step is compiled with the TPU backend; ROUGE on
rank 0 at the end of each epoch."""
import os

import evaluate
import torch
import torch.distributed as dist
from datasets import load_dataset
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

MAX_SRC, MAX_TGT = 512, 128


def main():
    dist.init_process_group(backend="tpu_dist")  # ok
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("tpu")
    tok = AutoTokenizer.from_pretrained("google/flan-t5-base")
    ds = load_dataset("xsum")

    def preprocess(batch):
        enc = tok(["summarize: " + d for d in batch["document"]], max_length=MAX_SRC, truncation=True, padding="max_length")  # ok
        lab = tok(text_target=batch["summary"], max_length=MAX_TGT, truncation=True, padding="max_length")  # ok
        enc["labels"] = [[t if t != tok.pad_token_id else -100 for t in seq] for seq in lab["input_ids"]]
        return enc

    train = ds["train"].map(preprocess, batched=True, remove_columns=ds["train"].column_names).with_format("torch")
    val = ds["validation"].select(range(2000)).map(preprocess, batched=True, remove_columns=ds["validation"].column_names).with_format("torch")
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(train, batch_size=16, sampler=sampler, num_workers=4)  # expect: TPU306
    val_loader = DataLoader(val, batch_size=32, drop_last=True)  # ok

    model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-base", torch_dtype=torch.bfloat16).to(device)
    ddp = DDP(model, device_ids=[rank])  # expect: TPU702
    optimizer = torch.optim.Adafactor(ddp.parameters(), lr=1e-3)  # ok

    @torch.compile(backend="tpu")  # expect: TPU604
    def train_step(batch):
        out = ddp(**batch)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return out.loss.detach()

    rouge = evaluate.load("rouge")
    for epoch in range(3):
        sampler.set_epoch(epoch)
        ddp.train()
        for step, batch in enumerate(loader):
            batch = {k: v.to(device) for k, v in batch.items()}
            loss = train_step(batch)
            if rank == 0 and step % 200 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")  # expect: TPU110
        if rank == 0:
            model.eval()
            preds, refs = [], []
            with torch.no_grad():
                for batch in val_loader:
                    out = model.generate(batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device), max_new_tokens=MAX_TGT, num_beams=4)  # ok
                    preds += tok.batch_decode(out.cpu(), skip_special_tokens=True)  # expect: TPU110
                    labels = torch.where(batch["labels"] == -100, tok.pad_token_id, batch["labels"])  # ok
                    refs += tok.batch_decode(labels, skip_special_tokens=True)  # ok
            print(rouge.compute(predictions=preds, references=refs))  # ok
            torch.save(model.state_dict(), f"t5_xsum_{epoch}.pt")  # expect: TPU110
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

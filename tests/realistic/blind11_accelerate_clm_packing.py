# Causal-LM continued pretraining with Accelerate (launched with `accelerate launch --tpu`),
# a packed dataset of fixed 1024-token blocks, gradient accumulation and a cosine schedule.
import math
import argparse

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from datasets import load_dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer, default_data_collator, get_cosine_schedule_with_warmup

BLOCK = 1024


def group_texts(examples):
    concatenated = {k: sum(examples[k], []) for k in examples.keys()}
    total = (len(concatenated["input_ids"]) // BLOCK) * BLOCK
    result = {k: [t[i:i + BLOCK] for i in range(0, total, BLOCK)] for k, t in concatenated.items()}
    result["labels"] = result["input_ids"].copy()
    return result


def evaluate(model, loader, accelerator):
    model.eval()
    losses = []
    for batch in loader:  # ok
        with torch.no_grad():
            out = model(**batch)
        losses.append(accelerator.gather_for_metrics(out.loss.repeat(batch["input_ids"].shape[0])))
    losses = torch.cat(losses)
    try:
        ppl = math.exp(torch.mean(losses))  # ok
    except OverflowError:
        ppl = float("inf")
    model.train()
    return ppl


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="EleutherAI/pythia-410m")
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--grad_accum", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--epochs", type=int, default=1)
    args = p.parse_args()

    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum, mixed_precision="bf16")
    set_seed(1234)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    raw = load_dataset("wikitext", "wikitext-103-raw-v1")
    tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])  # ok
    lm = tokenized.map(group_texts, batched=True)

    train_loader = DataLoader(lm["train"], shuffle=True, batch_size=args.batch_size, collate_fn=default_data_collator)  # expect: TPU306
    eval_loader = DataLoader(lm["validation"], batch_size=args.batch_size, collate_fn=default_data_collator)  # ok

    model = AutoModelForCausalLM.from_pretrained(args.model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    steps = math.ceil(len(train_loader) / args.grad_accum) * args.epochs
    scheduler = get_cosine_schedule_with_warmup(optimizer, 500, steps)
    model, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, eval_loader, scheduler)

    progress = tqdm(range(steps), disable=not accelerator.is_local_main_process)
    completed = 0
    for epoch in range(args.epochs):
        model.train()
        running = 0.0
        for step, batch in enumerate(train_loader):
            with accelerator.accumulate(model):
                outputs = model(**batch)
                loss = outputs.loss
                running += loss.detach().float()  # ok
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    grad_norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                progress.update(1)
                completed += 1
                progress.set_postfix(loss=loss.item())  # expect: TPU101|TPU105
                if completed % 50 == 0:
                    accelerator.log({"train_loss": running / 50, "grad_norm": grad_norm, "lr": scheduler.get_last_lr()[0]}, step=completed)  # ok
                    running = 0.0
        ppl = evaluate(model, eval_loader, accelerator)
        accelerator.print(f"epoch {epoch}: perplexity {ppl:.2f}")  # ok
    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained("clm-out", is_main_process=accelerator.is_main_process, save_function=accelerator.save)  # ok


if __name__ == "__main__":
    main()

"""Causal-LM fine-tuning with Hugging Face Accelerate (`accelerate launch --tpu ...`)."""
import math

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, default_data_collator


def main():
    accelerator = Accelerator(mixed_precision="bf16", log_with="tensorboard", project_dir="runs")
    set_seed(42)
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    raw = load_dataset("wikitext", "wikitext-2-raw-v1")
    block_size = 512

    def group_texts(examples):
        concatenated = sum(examples["input_ids"], [])
        total = (len(concatenated) // block_size) * block_size
        blocks = [concatenated[i : i + block_size] for i in range(0, total, block_size)]
        return {"input_ids": blocks, "labels": [b[:] for b in blocks]}

    tokenized = raw.map(lambda e: tokenizer(e["text"]), batched=True, remove_columns=["text"])
    lm = tokenized.map(group_texts, batched=True, remove_columns=tokenized["train"].column_names)
    train_loader = DataLoader(lm["train"], shuffle=True, batch_size=8, collate_fn=default_data_collator, drop_last=True)  # ok
    eval_loader = DataLoader(lm["validation"], batch_size=8, collate_fn=default_data_collator)  # ok
    mlm_collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)  # ok
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(model, optimizer, train_loader, eval_loader)
    accelerator.init_trackers("clm")

    step = 0
    for epoch in range(3):
        model.train()
        for batch in train_loader:
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            accelerator.log({"train_loss": loss}, step=step)  # expect: TPU104
            accelerator.print(f"epoch {epoch} step {step} loss {loss}")  # expect: TPU103|TPU104
            step += 1

        model.eval()
        losses = []
        for batch in eval_loader:
            with torch.no_grad():
                outputs = model(**batch)
            losses.append(accelerator.gather_for_metrics(outputs.loss.repeat(8)))  # ok
        losses = torch.cat(losses)
        perplexity = math.exp(torch.mean(losses))  # ok
        accelerator.print(f"epoch {epoch}: perplexity {perplexity:.2f}")  # ok
    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained("out", save_function=accelerator.save)  # ok
    accelerator.end_training()


if __name__ == "__main__":
    main()

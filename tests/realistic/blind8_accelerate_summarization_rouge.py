"""Fine-tune BART-large on CNN/DailyMail with Hugging Face Accelerate and evaluate ROUGE with
generate(); trimmed from the run_summarization_no_trainer example and run on a TPU v3-8 through
`accelerate launch` with the TPU config (bf16 mixed precision)."""
import argparse
import math

import evaluate
import nltk
import numpy as np
import torch
from accelerate import Accelerator
from datasets import load_dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, get_scheduler


def postprocess_text(preds, labels):
    preds = ["\n".join(nltk.sent_tokenize(p.strip())) for p in preds]
    labels = ["\n".join(nltk.sent_tokenize(l.strip())) for l in labels]
    return preds, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="facebook/bart-large")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--grad-accum", type=int, default=4)
    args = parser.parse_args()

    accelerator = Accelerator(gradient_accumulation_steps=args.grad_accum, mixed_precision="bf16", log_with="tensorboard", project_dir="runs")  # ok
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.model)
    raw = load_dataset("cnn_dailymail", "3.0.0")

    def preprocess(examples):
        inputs = tokenizer(examples["article"], max_length=1024, padding="max_length", truncation=True)  # ok
        labels = tokenizer(text_target=examples["highlights"], max_length=128, truncation=True)  # ok (the collator pads)
        inputs["labels"] = labels["input_ids"]
        return inputs

    with accelerator.main_process_first():
        processed = raw.map(preprocess, batched=True, remove_columns=raw["train"].column_names)
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)  # expect: TPU307
    train_dl = DataLoader(processed["train"], shuffle=True, collate_fn=collator, batch_size=8)  # expect: TPU306
    eval_dl = DataLoader(processed["validation"], collate_fn=collator, batch_size=16)  # ok

    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    model, optimizer, train_dl, eval_dl = accelerator.prepare(model, optimizer, train_dl, eval_dl)
    max_steps = args.epochs * math.ceil(len(train_dl) / args.grad_accum)
    lr_scheduler = get_scheduler("linear", optimizer, num_warmup_steps=500, num_training_steps=max_steps)
    accelerator.init_trackers("bart_cnndm")
    metric = evaluate.load("rouge")
    progress = tqdm(range(max_steps), disable=not accelerator.is_local_main_process)
    completed = 0

    for epoch in range(args.epochs):
        model.train()
        total_loss = 0
        for step, batch in enumerate(train_dl):
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                total_loss += loss.detach().float()  # ok
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)  # ok
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            if accelerator.sync_gradients:
                completed += 1
                progress.update(1)
                progress.set_postfix(loss=loss.item())  # expect: TPU101|TPU105
                if completed % 100 == 0:
                    accelerator.log({"train_loss": total_loss.item() / (step + 1), "lr": lr_scheduler.get_last_lr()[0]}, step=completed)  # ok

        model.eval()
        for batch in eval_dl:
            with torch.no_grad():
                generated = accelerator.unwrap_model(model).generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_length=128, num_beams=4)
                generated = accelerator.pad_across_processes(generated, dim=1, pad_index=tokenizer.pad_token_id)  # ok
                labels = accelerator.pad_across_processes(batch["labels"], dim=1, pad_index=tokenizer.pad_token_id)  # ok
                generated, labels = accelerator.gather_for_metrics((generated, labels))
                generated = generated.cpu().numpy()  # debatable (decoding needs host ids)
                labels = np.where(labels.cpu().numpy() != -100, labels.cpu().numpy(), tokenizer.pad_token_id)  # debatable
            preds, refs = postprocess_text(tokenizer.batch_decode(generated, skip_special_tokens=True), tokenizer.batch_decode(labels, skip_special_tokens=True))
            metric.add_batch(predictions=preds, references=refs)
        result = metric.compute(use_stemmer=True)
        accelerator.print(f"epoch {epoch}:", {k: round(v * 100, 2) for k, v in result.items()})  # ok
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # ok

    accelerator.wait_for_everyone()
    accelerator.unwrap_model(model).save_pretrained("bart_cnndm", is_main_process=accelerator.is_main_process, save_function=accelerator.save)  # ok
    if accelerator.is_main_process:
        tokenizer.save_pretrained("bart_cnndm")  # ok
    accelerator.end_training()


if __name__ == "__main__":
    main()

"""Extractive QA (SQuAD v1.1) fine-tune of a RoBERTa-base with Accelerate, launched on a TPU VM
with `accelerate launch --tpu`; offsets post-processing of start/end logits on the host."""
import collections

import evaluate
import numpy as np
import torch
from accelerate import Accelerator
from datasets import load_dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForQuestionAnswering, AutoTokenizer, DataCollatorWithPadding, default_data_collator, get_linear_schedule_with_warmup

MODEL, MAX_LEN, STRIDE = "roberta-base", 384, 128
tokenizer = AutoTokenizer.from_pretrained(MODEL)


def prepare_train(examples):
    enc = tokenizer(examples["question"], examples["context"], truncation="only_second", max_length=MAX_LEN,
                    stride=STRIDE, return_overflowing_tokens=True, return_offsets_mapping=True, padding="max_length")  # ok
    starts, ends = [], []
    for i, offsets in enumerate(enc.pop("offset_mapping")):
        answer = examples["answers"][enc["overflow_to_sample_mapping"][i]]
        s_char = answer["answer_start"][0]
        e_char = s_char + len(answer["text"][0])
        seq = enc.sequence_ids(i)
        ctx = [j for j, s in enumerate(seq) if s == 1]
        if offsets[ctx[0]][0] > s_char or offsets[ctx[-1]][1] < e_char:
            starts.append(0)
            ends.append(0)
            continue
        starts.append(next(j for j in ctx if offsets[j][1] > s_char))
        ends.append(max(j for j in ctx if offsets[j][0] < e_char))
    enc["start_positions"], enc["end_positions"] = starts, ends
    return enc


def prepare_eval(examples):
    enc = tokenizer(examples["question"], examples["context"], truncation="only_second", max_length=MAX_LEN,
                    stride=STRIDE, return_overflowing_tokens=True, return_offsets_mapping=True)
    enc["example_id"] = [examples["id"][i] for i in enc["overflow_to_sample_mapping"]]
    return enc


def best_span(start, end, offsets, context, n_best=20, max_answer=30):
    best, best_score = "", -1e9
    for s in np.argsort(start)[-1:-n_best - 1:-1]:  # ok
        for e in np.argsort(end)[-1:-n_best - 1:-1]:
            if offsets[s] is None or offsets[e] is None or e < s or e - s + 1 > max_answer:
                continue
            if start[s] + end[e] > best_score:
                best, best_score = context[offsets[s][0]:offsets[e][1]], start[s] + end[e]
    return best


def main(epochs=2):
    accelerator = Accelerator(mixed_precision="bf16")
    raw = load_dataset("squad")
    train = raw["train"].map(prepare_train, batched=True, remove_columns=raw["train"].column_names)
    features = raw["validation"].map(prepare_eval, batched=True, remove_columns=raw["validation"].column_names)
    train_loader = DataLoader(train.with_format("torch"), batch_size=32, shuffle=True, collate_fn=default_data_collator)  # expect: TPU306
    eval_loader = DataLoader(features.remove_columns(["example_id", "offset_mapping"]), batch_size=64,
                             collate_fn=DataCollatorWithPadding(tokenizer))  # expect: TPU307
    model = AutoModelForQuestionAnswering.from_pretrained(MODEL)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    scheduler = get_linear_schedule_with_warmup(optimizer, 500, epochs * len(train_loader))
    model, optimizer, train_loader, eval_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, eval_loader, scheduler)
    progress = tqdm(total=epochs * len(train_loader), disable=not accelerator.is_local_main_process)
    for epoch in range(epochs):
        model.train()
        running = 0.0
        for step, batch in enumerate(train_loader):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            running += loss.item()  # expect: TPU101
            progress.update(1)
            progress.set_postfix(loss=loss.detach())  # expect: TPU105
        accelerator.print(f"epoch {epoch}: mean loss {running / len(train_loader):.4f}")  # ok

    model.eval()
    all_start, all_end = [], []
    for batch in eval_loader:
        with torch.no_grad():
            out = model(**batch)
        start, end = accelerator.gather_for_metrics((out.start_logits, out.end_logits))
        all_start.extend(start.float().cpu().numpy())  # debatable
        all_end.extend(end.float().cpu().numpy())  # debatable
    by_example = collections.defaultdict(list)
    for i, f in enumerate(features):
        by_example[f["example_id"]].append(i)
    preds = []
    for ex in raw["validation"]:
        i = by_example[ex["id"]][0]
        offsets = [o if s == 1 else None for o, s in zip(features[i]["offset_mapping"], tokenizer(ex["question"], ex["context"]).sequence_ids())]  # ok
        preds.append({"id": ex["id"], "prediction_text": best_span(all_start[i], all_end[i], offsets, ex["context"])})
    metric = evaluate.load("squad")
    accelerator.print(metric.compute(predictions=preds, references=[{"id": ex["id"], "answers": ex["answers"]} for ex in raw["validation"]]))


if __name__ == "__main__":
    main()

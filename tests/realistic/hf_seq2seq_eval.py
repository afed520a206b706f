"""Evaluation of a summarisation model with generate(), in the Hugging Face examples style."""
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq


def build(model_name):
    tokenizer = AutoTokenizer.from_pretrained(model_name)
    model = AutoModelForSeq2SeqLM.from_pretrained(model_name).to(torch_xla.device())
    collator = DataCollatorForSeq2Seq(tokenizer, model=model)  # expect: TPU307
    bucketed = DataCollatorForSeq2Seq(tokenizer, model=model, padding="max_length", max_length=512)  # ok
    return tokenizer, model, bucketed


@torch.no_grad()
def evaluate(model, tokenizer, loader, metric, max_target_length=128):
    device = torch_xla.device()
    model.eval()
    for step, batch in enumerate(loader):  # expect: TPU607
        batch = {k: v.to(device) for k, v in batch.items()}
        generated = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_length=max_target_length, num_beams=4)
        labels = batch["labels"]
        labels = torch.where(labels != -100, labels, tokenizer.pad_token_id)  # ok
        decoded_preds = tokenizer.batch_decode(generated.cpu(), skip_special_tokens=True)  # debatable
        decoded_labels = tokenizer.batch_decode(labels.cpu(), skip_special_tokens=True)  # debatable
        metric.add_batch(predictions=decoded_preds, references=decoded_labels)
        gen_lens = (generated != tokenizer.pad_token_id).sum(-1)
        if step % 50 == 0:
            xm.master_print(f"step {step} mean generated length {gen_lens.float().mean()}")  # ok
    result = metric.compute(use_stemmer=True)
    return {k: round(v * 100, 4) for k, v in result.items()}  # ok


def postprocess_text(preds, labels):
    preds = [np.char.strip(p) for p in preds]  # ok
    labels = [np.char.strip(l) for l in labels]
    return preds, labels

"""Fine-tune whisper-small on a Common Voice split with torch_xla (one process per chip) and report
WER on the dev split with generate(). Ported from a single-GPU fp16 notebook."""
import os
import time

import evaluate
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from datasets import Audio, load_dataset
from torch.utils.data import DataLoader
from transformers import WhisperForConditionalGeneration, WhisperProcessor, get_linear_schedule_with_warmup

MODEL = "openai/whisper-small"
LANG = os.environ.get("CV_LANG", "nl")
processor = WhisperProcessor.from_pretrained(MODEL, language="dutch", task="transcribe")
wer_metric = evaluate.load("wer")


def prepare(example):
    audio = example["audio"]
    example["input_features"] = processor.feature_extractor(audio["array"], sampling_rate=16000).input_features[0]
    example["labels"] = processor.tokenizer(example["sentence"]).input_ids
    return example


def collate(rows):
    feats = torch.tensor(np.stack([r["input_features"] for r in rows]))  # ok
    batch = processor.tokenizer.pad({"input_ids": [r["labels"] for r in rows]}, padding=True, return_tensors="pt")  # expect: TPU307
    labels = batch.input_ids.masked_fill(batch.attention_mask.eq(0), -100)  # ok
    if (labels[:, 0] == processor.tokenizer.bos_token_id).all():  # ok
        labels = labels[:, 1:]
    return {"input_features": feats, "labels": labels}


def _mp_fn(index):
    device = torch_xla.device()
    ds = load_dataset("mozilla-foundation/common_voice_16_1", LANG, split="train+validation")
    ds = ds.cast_column("audio", Audio(sampling_rate=16000)).map(prepare, remove_columns=ds.column_names)
    dev = load_dataset("mozilla-foundation/common_voice_16_1", LANG, split="test[:512]")
    dev = dev.cast_column("audio", Audio(sampling_rate=16000))

    model = WhisperForConditionalGeneration.from_pretrained(MODEL, torch_dtype=torch.float16)  # expect: TPU503
    model.config.forced_decoder_ids = None
    model.to(device)
    model.train()

    sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    train_loader = DataLoader(ds, batch_size=16, sampler=sampler, collate_fn=collate, num_workers=4)  # expect: TPU306
    train_device_loader = pl.MpDeviceLoader(train_loader, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
    scheduler = get_linear_schedule_with_warmup(optimizer, 500, 4000)

    loss_history = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        t0 = time.time()
        for step, batch in enumerate(train_device_loader):
            out = model(input_features=batch["input_features"], labels=batch["labels"])
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # ok
            xm.optimizer_step(optimizer)
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            loss_history.append(out.loss.item())  # expect: TPU101
            if step % 100 == 0:
                xm.master_print(f"epoch {epoch} step {step} loss {np.mean(loss_history[-100:]):.4f}")  # ok
        xm.master_print(f"epoch {epoch} done in {time.time() - t0:.0f}s")  # ok

    model.eval()
    preds, refs = [], []
    eval_loader = DataLoader(dev, batch_size=32, collate_fn=lambda rows: rows)  # ok
    for rows in eval_loader:  # debatable (host feature extraction per batch; generate dominates)
        arrays = [r["audio"]["array"] for r in rows]
        feats = processor.feature_extractor(arrays, sampling_rate=16000, return_tensors="pt").input_features
        with torch.no_grad():
            generated = model.generate(feats.to(device, dtype=torch.float16), max_new_tokens=128)  # expect: TPU503
        preds += processor.batch_decode(generated.cpu(), skip_special_tokens=True)  # ok
        refs += [r["sentence"] for r in rows]
    wer = 100 * wer_metric.compute(predictions=preds, references=refs)  # ok
    xm.master_print(f"dev WER {wer:.2f}")
    if xm.is_master_ordinal():
        torch.save(model.state_dict(), f"whisper-small-{LANG}.pt")  # expect: TPU408
        processor.save_pretrained(f"whisper-small-{LANG}")  # ok


if __name__ == "__main__":
    torch_xla.launch(_mp_fn)

"""Fine-tune wav2vec2-base on LibriSpeech clean-100 with CTC, on a TPU v3-8 via torch_xla.launch.
Audio cropped to fixed 16 s windows; labels padded to a fixed width; WER on rank 0's host."""
import os

import jiwer
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, DistributedSampler
from transformers import Wav2Vec2ForCTC, Wav2Vec2Processor

os.environ["XLA_USE_BF16"] = "1"  # expect: TPU506
MAX_SAMPLES, MAX_LABEL = 16000 * 16, 256


class FixedCollator:
    def __init__(self, processor):
        self.processor = processor

    def __call__(self, batch):
        audio = [b["audio"]["array"][:MAX_SAMPLES] for b in batch]
        inputs = self.processor(audio, sampling_rate=16000, padding="max_length", max_length=MAX_SAMPLES, return_tensors="pt")  # ok
        labels = self.processor.tokenizer([b["text"] for b in batch], padding="max_length", max_length=MAX_LABEL, truncation=True, return_tensors="pt")  # ok
        label_ids = labels.input_ids.masked_fill(labels.attention_mask == 0, -100)  # ok
        return {"input_values": inputs.input_values, "labels": label_ids}


def _mp_fn(index, dataset):
    device = torch_xla.device()
    processor = Wav2Vec2Processor.from_pretrained("facebook/wav2vec2-base-960h")
    model = Wav2Vec2ForCTC.from_pretrained("facebook/wav2vec2-base", ctc_loss_reduction="mean", pad_token_id=processor.tokenizer.pad_token_id, vocab_size=len(processor.tokenizer))
    model.freeze_feature_encoder()
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sampler = DistributedSampler(dataset["train"], num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True)
    loader = DataLoader(dataset["train"], batch_size=8, sampler=sampler, collate_fn=FixedCollator(processor), drop_last=True)  # ok
    train_loader = pl.MpDeviceLoader(loader, device)
    for epoch in range(20):
        model.train()
        for step, batch in enumerate(train_loader):
            out = model(**batch)  # expect: TPU203
            out.loss.backward()
            xm.optimizer_step(optimizer)
            optimizer.zero_grad()
            if not torch.isfinite(out.loss):  # expect: TPU107
                xm.master_print(f"non-finite loss at step {step}")
        if xr.global_ordinal() == 0:
            model.eval()
            hyps, refs = [], []
            for b in dataset["validation"].select(range(200)):
                iv = processor(b["audio"]["array"], sampling_rate=16000, return_tensors="pt").input_values.to(device)  # ok
                with torch.no_grad():
                    logits = model(iv).logits
                ids = logits.argmax(-1).cpu()  # debatable (decoding needs host ids)
                hyps.append(processor.batch_decode(ids)[0])
                refs.append(b["text"])
            xm.master_print(f"epoch {epoch} WER {jiwer.wer(refs, hyps):.4f}")  # ok
        xm.rendezvous("epoch_end")


if __name__ == "__main__":
    from datasets import load_dataset

    ds = load_dataset("librispeech_asr", "clean", split={"train": "train.100", "validation": "validation"})
    torch_xla.launch(_mp_fn, args=(ds,))

"""Whisper-small fine-tuning on Common Voice Hindi with Accelerate (no Trainer), evaluated with
generate() and WER every epoch. The team's config runs it on a TPU v4-8 through `accelerate
launch` (distributed_type: XLA, mixed_precision: bf16) as well as on their A100 node."""
import argparse

import evaluate
import torch
from accelerate import Accelerator
from datasets import Audio, load_dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import WhisperForConditionalGeneration, WhisperProcessor, get_linear_schedule_with_warmup


class SpeechSeq2SeqCollator:
    def __init__(self, processor, decoder_start_token_id):
        self.processor, self.decoder_start_token_id = processor, decoder_start_token_id

    def __call__(self, features):
        inputs = [{"input_features": f["input_features"]} for f in features]
        batch = self.processor.feature_extractor.pad(inputs, return_tensors="pt")  # ok (30 s log-mels, fixed size)
        label_features = [{"input_ids": f["labels"]} for f in features]
        labels_batch = self.processor.tokenizer.pad(label_features, return_tensors="pt")  # expect: TPU307
        labels = labels_batch["input_ids"].masked_fill(labels_batch.attention_mask.ne(1), -100)  # ok (host)
        if (labels[:, 0] == self.decoder_start_token_id).all().cpu().item():  # ok (host tensors in a collator)
            labels = labels[:, 1:]
        batch["labels"] = labels
        return batch


def main(args):
    accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=args.grad_accum)
    torch.backends.cuda.matmul.allow_tf32 = True  # ok
    processor = WhisperProcessor.from_pretrained("openai/whisper-small", language="hindi", task="transcribe")
    model = WhisperForConditionalGeneration.from_pretrained("openai/whisper-small")
    model.config.forced_decoder_ids = None

    cv = load_dataset("mozilla-foundation/common_voice_11_0", "hi").cast_column("audio", Audio(sampling_rate=16000))

    def prepare(batch):
        audio = batch["audio"]
        batch["input_features"] = processor.feature_extractor(audio["array"], sampling_rate=16000).input_features[0]
        batch["labels"] = processor.tokenizer(batch["sentence"]).input_ids  # ok
        return batch

    cv = cv.map(prepare, remove_columns=cv.column_names["train"], num_proc=8)
    collator = SpeechSeq2SeqCollator(processor, model.config.decoder_start_token_id)
    train_dl = DataLoader(cv["train"], batch_size=args.batch_size, shuffle=True, collate_fn=collator)  # expect: TPU306
    eval_dl = DataLoader(cv["test"], batch_size=args.batch_size, collate_fn=collator)  # ok
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    total = len(train_dl) * args.epochs // args.grad_accum
    scheduler = get_linear_schedule_with_warmup(optimizer, 500, total)
    model, optimizer, train_dl, eval_dl, scheduler = accelerator.prepare(model, optimizer, train_dl, eval_dl, scheduler)
    wer_metric = evaluate.load("wer")

    skipped = 0
    for epoch in range(args.epochs):
        model.train()
        for step, batch in enumerate(tqdm(train_dl, disable=not accelerator.is_local_main_process)):
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                if not torch.isfinite(loss):  # expect: TPU107
                    skipped += 1
                    continue
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    grad_norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    if grad_norm > 100.0:  # expect: TPU108
                        accelerator.print(f"large gradient norm at step {step}")
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            if step % 100 == 0:
                accelerator.print(f"epoch {epoch} step {step} loss {loss.item():.4f}")  # ok

        model.eval()
        for batch in eval_dl:
            with torch.no_grad():
                generated = accelerator.unwrap_model(model).generate(batch["input_features"], max_new_tokens=225)
            generated = accelerator.pad_across_processes(generated, dim=1, pad_index=processor.tokenizer.pad_token_id)
            labels = accelerator.pad_across_processes(batch["labels"], dim=1, pad_index=-100)
            generated, labels = accelerator.gather_for_metrics((generated, labels))
            labels = labels.masked_fill(labels == -100, processor.tokenizer.pad_token_id)  # ok
            preds = processor.batch_decode(generated.cpu().numpy(), skip_special_tokens=True)  # debatable (decoding needs host ids)
            refs = processor.batch_decode(labels.cpu().numpy(), skip_special_tokens=True)  # debatable (decoding needs host ids)
            wer_metric.add_batch(predictions=preds, references=refs)
        wer = 100 * wer_metric.compute()
        accelerator.print(f"epoch {epoch} WER {wer:.2f} (skipped {skipped} non-finite steps)")  # ok
        accelerator.log({"wer": wer}, step=epoch)  # ok

    accelerator.wait_for_everyone()
    accelerator.unwrap_model(model).save_pretrained(args.out, save_function=accelerator.save, is_main_process=accelerator.is_main_process)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--grad_accum", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--out", default="whisper-small-hi")
    main(p.parse_args())

"""A small batch-inference server for a classifier on PyTorch/XLA."""
import queue
import threading

import torch
import torch_xla
import torch_xla.core.xla_model as xm
from transformers import AutoModelForSequenceClassification, AutoTokenizer

BUCKETS = (32, 64, 128, 256)


class InferenceServer:
    def __init__(self, model_name, max_batch=16):
        self.device = torch_xla.device()
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        model = AutoModelForSequenceClassification.from_pretrained(model_name).eval().to(self.device)
        self.model = torch.compile(model)  # expect: TPU603
        self.model_xla = torch.compile(model, backend="openxla")  # ok
        self.requests = queue.Queue()
        self.max_batch = max_batch

    def bucket(self, n):
        return next(b for b in BUCKETS if b >= n)

    def encode_dynamic(self, texts):
        return self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")  # expect: TPU307

    def encode_bucketed(self, texts):
        longest = max(len(self.tokenizer.tokenize(t)) for t in texts)  # ok
        return self.tokenizer(texts, padding="max_length", max_length=self.bucket(longest), truncation=True, return_tensors="pt")  # ok

    def encode_multiple(self, texts):
        return self.tokenizer(texts, padding=True, pad_to_multiple_of=64, return_tensors="pt")  # ok

    @torch.no_grad()
    def serve_forever(self):
        while True:
            batch = [self.requests.get()]
            while len(batch) < self.max_batch and not self.requests.empty():
                batch.append(self.requests.get_nowait())
            texts = [text for text, _ in batch]
            inputs = {k: v.to(self.device) for k, v in self.encode_bucketed(texts).items()}
            logits = self.model_xla(**inputs).logits
            xm.mark_step()  # expect: TPU601
            labels = logits.argmax(-1).cpu().tolist()  # ok
            for (_, reply), label in zip(batch, labels):
                reply.put(label)


def start(model_name):
    server = InferenceServer(model_name)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server

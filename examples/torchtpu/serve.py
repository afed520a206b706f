"""Batch inference with TorchTPU: classify images with a compiled model."""

import torch

from cuda_port.model import TinyViT


def load_model(checkpoint: str) -> torch.nn.Module:
    model = TinyViT()
    model.load_state_dict(torch.load(checkpoint, map_location="cpu"))
    return model.to("tpu").eval()


@torch.inference_mode()
@torch.compile(backend="tpu", dynamic=False)
def classify(model: torch.nn.Module, images: torch.Tensor) -> torch.Tensor:
    return model(images).argmax(dim=-1)


def classify_all(model, batches):
    results = []
    for images in batches:
        labels = classify(model, images.to("tpu"))
        results.extend(labels.tolist())
    return results

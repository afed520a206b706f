"""Fine-tunes a small causal language model with PyTorch/XLA on a single TPU device."""

import torch
import torch_xla
from torch.utils.data import DataLoader
from tqdm import tqdm


def finetune(model, dataset, tokenizer, steps: int = 1000):
    device = torch_xla.device()
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    loader = DataLoader(dataset, batch_size=16, shuffle=True)
    progress = tqdm(loader, total=steps)
    for step, batch in enumerate(progress):
        inputs = tokenizer(batch["text"], return_tensors="pt", padding="longest")
        inputs = {name: tensor.to(device) for name, tensor in inputs.items()}
        outputs = model(**inputs, labels=inputs["input_ids"])
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        progress.set_postfix(loss=outputs.loss)
        if step == steps:
            break
    return model

"""compute_metrics and callbacks for a Hugging Face Trainer run (predictions arrive as NumPy arrays)."""
import numpy as np
import torch
from transformers import EvalPrediction, TrainerCallback


def compute_metrics(eval_pred: EvalPrediction):
    logits, labels = eval_pred.predictions, eval_pred.label_ids
    preds = np.argmax(logits, axis=-1)
    mask = labels != -100
    accuracy = (preds[mask] == labels[mask]).mean()  # ok
    probs = torch.softmax(torch.from_numpy(logits), dim=-1)  # ok
    confidence = probs.max(-1).values[torch.from_numpy(mask)].mean().item()  # ok
    return {"accuracy": float(accuracy), "confidence": confidence}


def preprocess_logits_for_metrics(logits, labels):
    # Runs on the device for every evaluation batch, before the host copy.
    return logits.argmax(dim=-1)  # ok


class EarlyStopOnNaN(TrainerCallback):
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and np.isnan(logs.get("loss", 0.0)):  # ok
            control.should_training_stop = True

    def on_step_end(self, args, state, control, model=None, **kwargs):
        norm = torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]).norm()
        if norm > 1e4:  # expect: TPU107
            control.should_training_stop = True

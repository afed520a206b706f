"""Lightning callbacks used by the TPU training recipes."""
import time

import lightning.pytorch as pl
import torch


class ThroughputMonitor(pl.Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.start = time.time()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        loss = outputs["loss"]
        if torch.isnan(loss):  # expect: TPU107
            trainer.should_stop = True
        pl_module.log("throughput", batch[0].size(0) / (time.time() - self.start))  # ok
        pl_module.log("loss_value", loss.item())  # expect: TPU101


class GradNormLogger(pl.Callback):
    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        norms = [p.grad.norm() for p in pl_module.parameters() if p.grad is not None]
        total = torch.stack(norms).norm()
        pl_module.log("grad_norm", total)  # ok


class CheckpointOnBest(pl.Callback):
    def __init__(self, path):
        self.path = path
        self.best = float("inf")

    def on_validation_end(self, trainer, pl_module):
        current = trainer.callback_metrics.get("val_loss")
        if current is not None and current.item() < self.best:  # ok
            self.best = current.item()
            trainer.save_checkpoint(self.path)


def make_trainer():
    return pl.Trainer(accelerator="tpu", devices="auto", precision="bf16-true", callbacks=[ThroughputMonitor(), GradNormLogger()])

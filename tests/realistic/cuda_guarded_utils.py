"""Device utilities of a training library that supports CUDA, PyTorch/XLA and the CPU."""
import contextlib
import os
import random

import numpy as np
import torch

try:
    import torch_xla
    import torch_xla.core.xla_model as xm

    _XLA_AVAILABLE = True
except ImportError:
    _XLA_AVAILABLE = False


def get_device():
    if _XLA_AVAILABLE:
        return torch_xla.device()
    if torch.cuda.is_available():
        return torch.device("cuda")  # ok
    return torch.device("cpu")


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)  # ok


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # ok
    elif device.type == "xla":
        xm.wait_device_ops()  # ok


def configure_backends(deterministic=False):
    torch.backends.cudnn.benchmark = not deterministic  # ok
    torch.backends.cuda.matmul.allow_tf32 = True  # ok
    if deterministic:
        torch.backends.cudnn.deterministic = True  # expect: TPU411
        torch.use_deterministic_algorithms(True)  # expect: TPU411


def memory_summary(device):
    if device.type != "cuda":
        return {}
    return {"allocated": torch.cuda.memory_allocated(device), "reserved": torch.cuda.memory_reserved(device)}  # ok


@contextlib.contextmanager
def cuda_stream_if_available(device):
    stream = torch.cuda.Stream() if device.type == "cuda" else None  # ok
    ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()  # ok
    with ctx:
        yield


def move_to_device(batch, device):
    if isinstance(batch, dict):
        return {k: move_to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to_device(v, device) for v in batch)
    return batch.to(device, non_blocking=device.type == "cuda") if torch.is_tensor(batch) else batch  # ok


def world_info():
    if _XLA_AVAILABLE:
        return xm.xrt_world_size(), xm.get_ordinal()  # expect: TPU611
    return int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))

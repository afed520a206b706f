#!/usr/bin/env python3
"""Measures what `torch.cuda` memory and device APIs do on a machine without an NVIDIA driver, as on
a TPU VM (the behaviour TPU404's severities rest on): for each call, its value or what it raises.

    python3 -m venv v && v/bin/pip install torch==2.9.0
    v/bin/python scripts/measure-cuda-apis-without-driver.py

PyPI's torch wheel for Linux is the CUDA build; without a driver `torch.cuda.is_available()` is
False. The tests never run this. Results are recorded in docs/precision.md, "One spelling more
(session 17, s17/spellings)".
"""

import warnings

import torch

CALLS = [
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "memory_stats",
    "memory_snapshot",
    "empty_cache",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_accumulated_memory_stats",
    "memory_summary",
    "ipc_collect",
    "utilization",
    "temperature",
    "power_draw",
    "mem_get_info",
    "synchronize",
]


def main() -> None:
    warnings.simplefilter("ignore")
    print(f"torch {torch.__version__}, CUDA build {torch.version.cuda}, available {torch.cuda.is_available()}")
    for name in CALLS:
        try:
            value = getattr(torch.cuda, name)()
        except Exception as error:  # what it raises is the measurement
            print(f"{name:32} raises {type(error).__name__}: {str(error).splitlines()[0][:70]}")
            continue
        print(f"{name:32} returns {value!r:.60}")


if __name__ == "__main__":
    main()

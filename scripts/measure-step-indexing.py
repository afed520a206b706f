#!/usr/bin/env python3
"""Measures whether indexing a device tensor by a Python loop counter compiles a graph per step
(pitfalls #45; the behaviour TPU310's step-index case rests on): for each spelling, how many XLA
compilations eight steps cost (torch_xla's `CompileTime` metric count), with a `torch_xla.sync()`
per step as a sampling loop has.

    python3 -m venv v && v/bin/pip install torch==2.9.0 torch-xla==2.9.0
    PJRT_DEVICE=CPU v/bin/python scripts/measure-step-indexing.py

Needs real torch_xla (the XLA CPU device is enough); the tests never run it. Results are recorded
in docs/precision.md, "One spelling more (session 17, s17/spellings)".
"""

import torch
import torch_xla
import torch_xla.debug.metrics as met

STEPS = 8


def compilations() -> int:
    data = met.metric_data("CompileTime")
    return data[0] if data else 0


def run(name, make_step) -> None:
    """Runs `step(i)` for `STEPS` steps twice (a second sampling call reuses the cache) and
    prints the compilations of each pass. Each spelling gets a sample of its own width, so no
    spelling reuses another's compiled graphs."""
    run.width += 1
    step = make_step(run.width)
    torch_xla.sync()
    counts = []
    for _ in range(2):
        before = compilations()
        for i in range(STEPS):
            step(i)
            torch_xla.sync()
        counts.append(compilations() - before)
    print(f"{name:62} {counts[0]:2} compilations in {STEPS} steps, {counts[1]:2} on a second pass")


run.width = 16


def main() -> None:
    device = torch_xla.device()
    sigmas = torch.linspace(1.0, 0.0, STEPS + 1, device=device)
    host_sigmas = [float(s) for s in torch.linspace(1.0, 0.0, STEPS + 1)]
    precomputed = [sigmas[i] for i in range(STEPS + 1)]  # indexed once, before the loop
    torch_xla.sync()

    def stepper(width, pick):
        """An Euler step on a (4, width) sample with the sigmas `pick(i)` chooses."""
        state = {"x": torch.randn(4, width, device=device)}

        def step(i):
            sigma_from, sigma_to = pick(i)
            state["x"] = state["x"] + (sigma_to - sigma_from) * state["x"] * 0.1

        return step

    def counter(i):
        return torch.tensor(i, device=device)

    spellings = {
        "x[i], x[i + 1] (device tensor, Python int)": lambda i: (sigmas[i], sigmas[i + 1]),
        "x.select(0, i)": lambda i: (sigmas.select(0, i), sigmas.select(0, i + 1)),
        "x[i:i + 1] (slice by the counter)": lambda i: (sigmas[i : i + 1], sigmas[i + 1 : i + 2]),
        "x.index_select(0, torch.tensor([i], device=dev))": lambda i: (
            sigmas.index_select(0, torch.tensor([i], device=device)),
            sigmas.index_select(0, torch.tensor([i + 1], device=device)),
        ),
        "x[torch.tensor(i, device=dev)]": lambda i: (sigmas[counter(i)], sigmas[counter(i + 1)]),
        "x[0], x[1] (constant indices)": lambda i: (sigmas[0], sigmas[1]),
        "host list[i] (Python floats)": lambda i: (host_sigmas[i], host_sigmas[i + 1]),
        "list of device scalars indexed before the loop": lambda i: (
            precomputed[i],
            precomputed[i + 1],
        ),
    }
    for name, pick in spellings.items():
        run(name, lambda width, pick=pick: stepper(width, pick))

    def writer(width, write):
        """A decode loop's write of one column per step into a (4, width) buffer."""
        state = {"buffer": torch.zeros(4, width, device=device)}

        def step(i):
            column = state["buffer"].sum(-1) + 1.0
            write(state, i, column)

        return step

    def write_by_counter(state, i, column):
        state["buffer"][:, i] = column

    def write_by_device_index(state, i, column):
        index = torch.tensor([i], device=device)
        state["buffer"] = state["buffer"].index_copy(1, index, column[:, None])

    run("buffer[:, i] = value (a write by the counter)", lambda width: writer(width, write_by_counter))
    run(
        "buffer.index_copy(1, torch.tensor([i], device=dev), value)",
        lambda width: writer(width, write_by_device_index),
    )


if __name__ == "__main__":
    main()

"""bench_step.py: time one GPT-2 small training step with either TPU stack on the same VM,
`--backend xla` (torch_xla, one process per chip via torch_xla.launch) or `--backend tpu`
(TorchTPU, compiled step), and on a GPU box with `--backend cuda` for the comparison table."""
import argparse
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

SEQ, VOCAB = 1024, 50257


def make_model(device):
    with torch.device(device):
        return GPT2LMHeadModel(GPT2Config(n_positions=SEQ))  # ok


def bench_xla(index, args):
    import torch_xla
    import torch_xla.runtime as xr

    device = torch_xla.device()
    model = make_model("cpu").to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, VOCAB, (args.batch, SEQ)).to(device)  # expect: TPU407

    def step():
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()  # expect: TPU606
        opt.zero_grad(set_to_none=True)
        return loss

    step_fn = torch_xla.compile(step, name="gpt2_step")
    for _ in range(3):
        step_fn()
    torch_xla.sync(wait=True)  # ok
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step_fn()
    elapsed = time.perf_counter() - start  # expect: TPU111
    if xr.global_ordinal() == 0:
        print(f"xla: {elapsed / args.steps * 1e3:.1f} ms/step, final loss {loss.item():.3f}")  # ok


def bench_tpu(args):
    import torch_tpu  # noqa: F401

    device = torch.device("tpu")
    model = make_model(device)  # ok
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)  # expect: TPU608

    @torch.compile(backend="tpu", dynamic=False)  # ok
    def step(ids):
        loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    ids = torch.randint(0, VOCAB, (args.batch, SEQ), device=device)  # ok
    for _ in range(3):
        step(ids)
    torch.tpu.synchronize()  # ok
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step(ids)
        if args.check_nan and torch.isnan(loss):  # expect: TPU107
            raise RuntimeError("nan loss")
    torch.tpu.synchronize()  # ok
    elapsed = time.perf_counter() - start  # ok
    print(f"tpu: {elapsed / args.steps * 1e3:.1f} ms/step, final loss {loss.item():.3f}")  # ok


def bench_cuda(args):
    device = torch.device("cuda")  # ok
    model = make_model(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, VOCAB, (args.batch, SEQ), device=device)  # ok
    for _ in range(args.steps + 3):
        with torch.autocast("cuda", dtype=torch.bfloat16):  # ok
            loss = model(ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()  # ok
    print(f"cuda: max memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")  # ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["xla", "tpu", "cuda"], default="tpu")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--check-nan", action="store_true")
    args = parser.parse_args()
    if args.backend == "xla":
        import torch_xla

        torch_xla.launch(bench_xla, args=(args,))
    elif args.backend == "tpu":
        bench_tpu(args)
    else:
        bench_cuda(args)


if __name__ == "__main__":
    main()

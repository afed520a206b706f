"""FSDP fine-tuning of a 7B model written for 8 GPUs; the team wants to run it on a TPU VM."""
import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


def setup():
    dist.init_process_group("nccl")  # expect: TPU701
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)  # expect: TPU404
    return local_rank


def main():
    local_rank = setup()
    torch.backends.cuda.matmul.allow_tf32 = True  # ok
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)  # ok
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    bf16 = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)
    model = FSDP(model, auto_wrap_policy=policy, mixed_precision=bf16, device_id=torch.cuda.current_device())  # expect: TPU404
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    from data import get_loader

    loader = get_loader(batch_size=4)
    for step, batch in enumerate(loader):
        batch = {k: v.to(local_rank) for k, v in batch.items()}  # expect: TPU4xx
        loss = model(**batch).loss
        loss.backward()
        model.clip_grad_norm_(1.0)
        optimizer.step()
        optimizer.zero_grad()
        if local_rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f} mem {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")  # expect: TPU404
    dist.barrier()
    state = model.state_dict()
    if local_rank == 0:
        torch.save(state, "llama7b_ft.pt")  # ok


if __name__ == "__main__":
    main()

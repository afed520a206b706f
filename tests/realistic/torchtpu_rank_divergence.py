"""Logging and checkpointing in a TorchTPU data-parallel loop: the right and the wrong way."""
import torch
import torch.distributed as dist

device = torch.device("tpu")


def train_step(model, optimizer, batch):
    x, y = (t.to(device) for t in batch)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def train_wrong(model, optimizer, loader, rank, max_steps=10_000):
    for step, batch in enumerate(loader):
        loss = train_step(model, optimizer, batch)
        if rank == 0 and step >= max_steps:
            return  # expect: TPU1xx
        if rank == 0:
            print(loss)  # expect: TPU110|TPU103
        if dist.get_rank() == 0 and step % 500 == 0:
            stats = loss.detach().tolist()  # expect: TPU110
            print(stats)


def train_right(model, optimizer, loader, rank):
    for step, batch in enumerate(loader):
        loss = train_step(model, optimizer, batch)
        if step % 500 == 0:
            value = loss.item()  # ok
            state = {k: v.cpu() for k, v in model.state_dict().items()}  # ok
            if rank == 0:
                print(f"step {step} loss {value:.4f}")  # ok
                torch.save(state, f"ckpt_{step}.pt")  # ok
    dist.barrier()

"""Data-parallel training over MPI, as Horovod does it, in a few lines of mpi4py: the demo
algorithm "mpi-sample".

Every rank computes the gradients of its share of the batch; one MPI Allreduce averages them
(what ``horovod.torch.DistributedOptimizer`` does), and every rank takes the same step.
Horovod itself is not needed. Run it under mpirun (image pytorch-2, mode MPI: the console
puts ``mpirun -np <nodes x slots> ...`` in front of ``python train.py --steps 20``); alone,
it trains as one rank.

Every step prints the line the console's performance check reads::

    this iteration hardware time is 1.234 and e2e time is 2.345 ms.

Rank 0 writes checkpoints to ``--output`` (default: $CONSOLE_OUTPUT_DIR, else ``outputs``,
which is /workspace/outputs in a job) as ``checkpoint-<step>.pt`` and TensorBoard scalars to
``<output>/tensorboard``; a run resumes from the newest checkpoint (rank 0 reads it and sends
it to the others). SIGTERM saves a checkpoint and exits with 143.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch
from mpi4py import MPI
from torch import nn
from torch.utils.tensorboard import SummaryWriter

SAMPLES, FEATURES, CLASSES = 2048, 32, 4
CHECKPOINT = re.compile(r"checkpoint-(\d+)\.pt")
STOPPED_EXIT_CODE = 128 + signal.SIGTERM


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Average gradients with MPI Allreduce.")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per step (demos)")
    parser.add_argument("--output", default=os.environ.get("CONSOLE_OUTPUT_DIR") or "outputs")
    parser.add_argument("--save-every", type=int, default=10)
    return parser.parse_args(argv)


def newest_checkpoint(folder: Path):
    found = [
        (int(m.group(1)), p)
        for p in folder.glob("checkpoint-*.pt")
        if (m := CHECKPOINT.fullmatch(p.name))
    ]
    return max(found)[1] if found else None


def save(folder: Path, step, model):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"checkpoint-{step}.pt"
    partial = folder / f".checkpoint-{step}.pt.partial"
    torch.save({"step": step, "model": model.state_dict()}, partial)
    os.replace(partial, path)
    return path


def allreduce_gradients(model, comm):
    """One Allreduce for all gradients (flattened), then the average back in place."""
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads]).numpy()
    total = np.empty_like(flat)
    comm.Allreduce(flat, total, op=MPI.SUM)
    total /= comm.Get_size()
    offset = 0
    for grad in grads:
        count = grad.numel()
        grad.copy_(torch.from_numpy(total[offset : offset + count]).view_as(grad))
        offset += count


def resume(model, output: Path, comm) -> int:
    """Rank 0 reads the newest checkpoint and sends it to the others; every rank loads it.
    Returns the step to go on from (0 without a checkpoint)."""
    state = None
    if comm.Get_rank() == 0:
        newest = newest_checkpoint(output)
        if newest is not None:
            state = torch.load(newest, map_location="cpu")
            print(f"resumed from {os.path.abspath(newest)} (step {state['step']})", flush=True)
        else:
            print(f"no checkpoint in {os.path.abspath(output)}: starting from step 0", flush=True)
    state = comm.bcast(state, root=0)
    if state is None:
        return 0
    model.load_state_dict(state["model"])
    return state["step"]


def dataset():
    """The same inputs and labels on every rank and every run."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(SAMPLES, FEATURES, generator=generator)
    labels = (inputs @ torch.randn(FEATURES, CLASSES, generator=generator)).argmax(dim=1)
    return inputs, labels


def train_step(model, optimizer, loss_fn, data, index, comm):
    """One step on this rank's share of the batch, with the gradients averaged over every
    rank. Returns this rank's loss and the time of its own computation (ms)."""
    inputs, labels = data
    compute = time.perf_counter()
    optimizer.zero_grad()
    loss = loss_fn(model(inputs[index]), labels[index])
    loss.backward()
    hardware_ms = (time.perf_counter() - compute) * 1000
    allreduce_gradients(model, comm)
    optimizer.step()
    return loss, hardware_ms


def report(writer, step: int, steps: int, loss: float, hardware_ms: float, e2e_ms: float) -> None:
    """Rank 0's lines of a step (the console's performance watch reads the second) and its
    TensorBoard scalars."""
    print(f"step {step}/{steps} loss {loss:.4f}")
    print(f"this iteration hardware time is {hardware_ms:.3f} and e2e time is "
          f"{e2e_ms:.3f} ms.", flush=True)  # fmt: skip
    writer.add_scalar("train/loss", loss, step)
    writer.add_scalar("time/e2e_ms", e2e_ms, step)


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    torch.set_num_threads(1)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    output = Path(args.output)
    step = resume(model, output, comm)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    data = dataset()
    writer = SummaryWriter(str(output / "tensorboard")) if rank == 0 else None
    if rank == 0:
        who = f"{size} MPI rank{'s' if size > 1 else ''}"
        print(f"training: {who}, steps {step}..{args.steps}", flush=True)
    loss_fn = nn.CrossEntropyLoss()
    while step < args.steps:
        began = time.perf_counter()
        order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(step))
        index = order[rank * args.batch_size : (rank + 1) * args.batch_size]
        loss, hardware_ms = train_step(model, optimizer, loss_fn, data, index, comm)
        step += 1
        time.sleep(args.sleep)
        # Everyone stops at the same step once any rank got SIGTERM.
        stopping = comm.allreduce(1 if stop else 0, op=MPI.MAX) > 0
        mean_loss = comm.allreduce(loss.item(), op=MPI.SUM) / size
        e2e_ms = (time.perf_counter() - began) * 1000
        if rank == 0:
            report(writer, step, args.steps, mean_loss, hardware_ms, e2e_ms)
            if stopping or step % args.save_every == 0 or step == args.steps:
                print(f"saved {os.path.abspath(save(output, step, model))}", flush=True)
        if stopping:
            if rank == 0:
                print(f"stopped by SIGTERM at step {step}", flush=True)
                writer.close()
            return STOPPED_EXIT_CODE
    if rank == 0:
        writer.close()
        print(f"done: {step} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

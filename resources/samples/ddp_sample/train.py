"""A small PyTorch DistributedDataParallel example: the demo algorithm "ddp-sample".

It learns a made-up classification task (data generated from a fixed seed: no download) with
a tiny MLP on CPU, through the gloo backend. It runs

* alone: ``python train.py --epochs 3``;
* under ``python -m torch.distributed.launch --nproc_per_node=N --nnodes=M --node_rank=R
  --master_addr=A --master_port=P train.py ...`` (what the console runs in PyTorch mode),
  or any launcher that sets WORLD_SIZE, RANK, MASTER_ADDR and MASTER_PORT.

Every iteration prints the line the console's performance check reads::

    this iteration hardware time is 12.345 and e2e time is 512.345 ms.

Checkpoints go to ``--output`` (default: $CONSOLE_OUTPUT_DIR, else ``outputs`` in the
working folder, which is /workspace/outputs in a job) as ``checkpoint-<step>.pt``; a run
resumes from the newest one there. The first process writes TensorBoard scalars (loss, step
time) to ``<output>/tensorboard``. SIGTERM (stop, expiry, a hardware fault) saves a
checkpoint and exits with 143, so that the next run resumes where this one stopped.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.tensorboard import SummaryWriter

SAMPLES, FEATURES, CLASSES = 2048, 32, 4
CHECKPOINT = re.compile(r"checkpoint-(\d+)\.pt")
STOPPED_EXIT_CODE = 128 + signal.SIGTERM


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Train a tiny MLP with DDP on CPU.")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=0, help="total steps (overrides --epochs)")
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per step (demos)")
    parser.add_argument(
        "--output",
        default=os.environ.get("CONSOLE_OUTPUT_DIR") or "outputs",
        help="checkpoint folder (default: $CONSOLE_OUTPUT_DIR, else ./outputs)",
    )
    parser.add_argument("--keep", type=int, default=3, help="checkpoints to keep")
    # torch.distributed.launch passes --local-rank (older releases --local_rank) unless
    # --use-env is given; torchrun only sets LOCAL_RANK.
    parser.add_argument(
        "--local-rank", "--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0))
    )
    return parser.parse_args(argv)


class Stop:
    """Set by SIGTERM; read between steps so that a step is never cut in half."""

    requested = False

    @classmethod
    def on_signal(cls, signum, frame):
        cls.requested = True


def dataset():
    """The same inputs and labels on every process and every run."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(SAMPLES, FEATURES, generator=generator)
    teacher = torch.randn(FEATURES, CLASSES, generator=generator)
    return inputs, (inputs @ teacher).argmax(dim=1)


def batch_indices(step, steps_per_epoch, batch, rank, world):
    """This process's share of the global batch of ``step``: a fresh order every epoch,
    computed from the step alone, so a resumed run sees what the stopped one would have."""
    epoch, within = divmod(step, steps_per_epoch)
    order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(epoch))
    start = (within * world + rank) * batch
    return order[start : start + batch]


def newest_checkpoint(folder: Path):
    found = [
        (int(m.group(1)), p)
        for p in folder.glob("checkpoint-*.pt")
        if (m := CHECKPOINT.fullmatch(p.name))
    ]
    return max(found)[1] if found else None


def save(folder: Path, step, model, optimizer, keep):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"checkpoint-{step}.pt"
    partial = folder / f".checkpoint-{step}.pt.partial"
    state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state, partial)
    os.replace(partial, path)  # a kill during the write never leaves a broken newest file
    old = sorted(folder.glob("checkpoint-*.pt"), key=lambda p: int(CHECKPOINT.fullmatch(p.name)[1]))
    for stale in old[: max(0, len(old) - keep)]:
        stale.unlink(missing_ok=True)
    return path


def agree(flags, distributed: bool):
    """Each flag true on every process once any process has it: a SIGTERM reaches the
    processes at slightly different moments, and one leaving alone would leave the others
    waiting for it."""
    if not distributed:
        return flags
    value = torch.tensor([1 if flag else 0 for flag in flags])
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return [bool(v) for v in value.tolist()]


def shown(path) -> str:
    """A path as the job sees it: absolute (/workspace/outputs/...), without following links,
    which would lead to the storage behind the mount, a place the user does not know."""
    return os.path.abspath(path)


@dataclass(frozen=True)
class Process:
    """This process among the job's: its rank of ``world``, whether it writes checkpoints
    and TensorBoard scalars, and whether it prints (one voice per node)."""

    rank: int
    world: int
    writes: bool
    talks: bool

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def say(self, line):
        if self.talks:
            print(line, flush=True)


def join(local_rank: int) -> Process:
    """Join the job's processes (WORLD_SIZE and the launcher's variables), if there are
    several."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(minutes=5))
        rank = dist.get_rank()
        writes = rank == 0
    else:
        rank = 0
        # Under mpirun every process trains alone: only the first one writes checkpoints.
        writes = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0")) == "0"
    # One voice per node: the node's log is what is read.
    return Process(rank, world, writes, talks=local_rank == 0)


def resume(output: Path, model, optimizer) -> int:
    """Load the newest checkpoint in ``output``; the step to go on from (0 without one)."""
    newest = newest_checkpoint(output)
    if newest is None:
        print(f"no checkpoint in {shown(output)}: starting from step 0", flush=True)
        return 0
    state = torch.load(newest, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    print(f"resumed from {shown(newest)} (step {state['step']})", flush=True)
    return state["step"]


def train_step(net, optimizer, loss_fn, data, index):
    """One step on this process's share of the batch (DDP averages the gradients).
    Returns the loss and the step's time (ms)."""
    inputs, labels = data
    compute = time.perf_counter()
    optimizer.zero_grad()
    loss = loss_fn(net(inputs[index]), labels[index])
    loss.backward()
    optimizer.step()
    return loss, (time.perf_counter() - compute) * 1000


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, Stop.on_signal)
    # Tiny model, several processes per machine: more threads would only fight over cores.
    torch.set_num_threads(1)
    me = join(args.local_rank)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    output = Path(args.output)
    start = torch.tensor([resume(output, model, optimizer) if me.writes else 0])
    if me.distributed:
        dist.broadcast(start, src=0)  # the others start where rank 0 resumed
        # Wrapping broadcasts rank 0's parameters: nobody else needs the checkpoint file.
        net = DistributedDataParallel(model)
    else:
        net = model
    return train(args, me, net, model, optimizer, int(start.item()))


def train(args, me: Process, net, model, optimizer, step: int) -> int:
    """The steps from ``step`` on; the exit code: 143 when stopped by SIGTERM (after a
    save), 1 when the loss diverged, else 0."""
    say, rank, world = me.say, me.rank, me.world
    inputs, labels = dataset()
    steps_per_epoch = max(1, SAMPLES // (args.batch_size * world))
    total = args.steps or args.epochs * steps_per_epoch
    output = Path(args.output)
    stopped = False
    say(f"training: {world} process(es), {steps_per_epoch} steps per epoch, steps {step}..{total}")
    writer = SummaryWriter(str(output / "tensorboard")) if me.writes else None
    loss_fn = nn.CrossEntropyLoss()
    while step < total:
        began = time.perf_counter()
        index = batch_indices(step, steps_per_epoch, args.batch_size, rank, world)
        loss, hardware_ms = train_step(net, optimizer, loss_fn, (inputs, labels), index)
        step += 1
        time.sleep(args.sleep)
        stopping, diverged = agree([Stop.requested, not math.isfinite(loss.item())], me.distributed)
        if diverged:
            print(f"loss is not finite at step {step}: diverged (is --lr too high?)",
                  file=sys.stderr, flush=True)  # fmt: skip
            if me.distributed:
                dist.destroy_process_group()
            return 1
        e2e_ms = (time.perf_counter() - began) * 1000
        say(f"step {step}/{total} epoch {(step - 1) // steps_per_epoch + 1} loss {loss.item():.4f}")
        say(f"this iteration hardware time is {hardware_ms:.3f} and e2e time is {e2e_ms:.3f} ms.")
        if writer is not None:
            writer.add_scalar("train/loss", loss.item(), step)
            writer.add_scalar("time/e2e_ms", e2e_ms, step)
        if me.writes and (stopping or step % steps_per_epoch == 0 or step == total):
            path = save(output, step, model, optimizer, args.keep)
            print(f"saved {shown(path)}", flush=True)
        if stopping:
            say(f"stopped by SIGTERM at step {step}; the next run resumes from here")
            stopped = True
            break
    if writer is not None:
        writer.close()
    if me.distributed:
        # Every rank reaches the end before any leaves: rank 0 holds the rendezvous store,
        # and a peer still talking to it when it is gone aborts (SIGABRT) instead of ending.
        dist.barrier()
        dist.destroy_process_group()
    if stopped:
        return STOPPED_EXIT_CODE
    say(f"done: {step} steps")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without the interpreter's teardown: gloo's native threads can abort a rank there
    # ("terminate called without an active exception", exit -6) when rank 0, which holds the
    # rendezvous store, has already gone, after training has finished and saved, turning a
    # success into a failure.
    os._exit(code)

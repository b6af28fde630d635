"""A small DeepSpeed training on CPU: the demo algorithm "deepspeed-sample".

A tiny MLP on a made-up classification task (fixed seed: no download), trained through a
DeepSpeed engine (data parallel, the gloo backend on CPU). Start it with the ``deepspeed``
launcher, which reads the hostfile the console writes (image deepspeed, mode DeepSpeed)::

    bash -c 'deepspeed --hostfile "$MLP_MPI_HOSTFILE" --master_addr "$MLP_WORKER_0_HOST"
             --no_ssh_check /workspace/algorithm/train.py --steps 20'

(``--no_ssh_check``: on this console's own machine the nodes are processes without sshd.)
Alone, ``python train.py`` trains as one process.

Every step prints the line the console's performance check reads::

    this iteration hardware time is 1.234 and e2e time is 2.345 ms.

Checkpoints are DeepSpeed's own (``save_checkpoint``) in ``--output`` (default:
$CONSOLE_OUTPUT_DIR, else ``outputs``, which is /workspace/outputs in a job), one folder per
step and ``latest`` naming the newest; a run resumes from it. TensorBoard scalars go to
``<output>/tensorboard``. SIGTERM saves a checkpoint and exits with 143.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

import deepspeed
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.tensorboard import SummaryWriter

SAMPLES, FEATURES, CLASSES = 2048, 32, 4
STOPPED_EXIT_CODE = 128 + signal.SIGTERM


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Train a tiny MLP with DeepSpeed on CPU.")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per step (demos)")
    parser.add_argument("--output", default=os.environ.get("CONSOLE_OUTPUT_DIR") or "outputs")
    parser.add_argument("--save-every", type=int, default=10)
    # The launcher passes --local_rank to every process it starts.
    parser.add_argument("--local_rank", "--local-rank", type=int, default=0)
    return parser.parse_args(argv)


def config(batch_size: int, lr: float) -> dict:
    return {
        "train_micro_batch_size_per_gpu": batch_size,
        "optimizer": {"type": "SGD", "params": {"lr": lr}},
        "steps_per_print": 1_000_000,  # the console's own line says enough
    }


def resume(engine, output: Path, rank: int) -> int:
    """The step to go on from: the newest checkpoint's (DeepSpeed's ``latest``), else 0."""
    step = 0
    if (output / "latest").is_file():
        _, client = engine.load_checkpoint(str(output))
        step = (client or {}).get("step", engine.global_steps)
        if rank == 0:
            print(f"resumed from {os.path.abspath(output)} (step {step})", flush=True)
    elif rank == 0:
        print(f"no checkpoint in {os.path.abspath(output)}: starting from step 0", flush=True)
    return step


def dataset():
    """The same inputs and labels on every process and every run."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(SAMPLES, FEATURES, generator=generator)
    labels = (inputs @ torch.randn(FEATURES, CLASSES, generator=generator)).argmax(dim=1)
    return inputs, labels


def train_step(engine, loss_fn, data, index):
    """One step on this process's share of the batch (the engine averages the gradients).
    Returns the loss and the step's time (ms)."""
    inputs, labels = data
    compute = time.perf_counter()
    loss = loss_fn(engine(inputs[index]), labels[index])
    engine.backward(loss)
    engine.step()
    return loss, (time.perf_counter() - compute) * 1000


def report(writer, step: int, steps: int, loss: float, hardware_ms: float, e2e_ms: float) -> None:
    """The first process's lines of a step (the console's performance watch reads the
    second) and its TensorBoard scalars."""
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
    deepspeed.init_distributed(dist_backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=config(args.batch_size, args.lr)
    )
    output = Path(args.output)
    step = resume(engine, output, rank)
    data = dataset()
    writer = SummaryWriter(str(output / "tensorboard")) if rank == 0 else None
    if rank == 0:
        who = f"{world} DeepSpeed process{'es' if world > 1 else ''}"
        print(f"training: {who}, steps {step}..{args.steps}", flush=True)
    loss_fn = nn.CrossEntropyLoss()
    while step < args.steps:
        began = time.perf_counter()
        order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(step))
        index = order[rank * args.batch_size : (rank + 1) * args.batch_size]
        loss, hardware_ms = train_step(engine, loss_fn, data, index)
        step += 1
        time.sleep(args.sleep)
        flag = torch.tensor([1 if stop else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # everyone stops at the same step
        stopping = bool(flag.item())
        e2e_ms = (time.perf_counter() - began) * 1000
        if rank == 0:
            report(writer, step, args.steps, loss.item(), hardware_ms, e2e_ms)
        if stopping or step % args.save_every == 0 or step == args.steps:
            # Every process takes part: DeepSpeed's save is a collective call.
            engine.save_checkpoint(str(output), tag=f"step-{step}", client_state={"step": step})
            if rank == 0:
                print(f"saved {os.path.abspath(output / f'step-{step}')}", flush=True)
        if stopping:
            if rank == 0:
                print(f"stopped by SIGTERM at step {step}", flush=True)
                writer.close()
            return STOPPED_EXIT_CODE
    if writer is not None:
        writer.close()
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"done: {step} steps", flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without the interpreter's teardown: the native threads of DeepSpeed's CPU
    # communicator can abort the process there ("terminate called without an active
    # exception", exit -6) after training has finished and saved, turning a success into a
    # failure.
    os._exit(code)

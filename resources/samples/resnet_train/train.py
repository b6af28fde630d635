"""A tiny ResNet on CIFAR-shaped data, on one node's CPU: the demo algorithm "resnet-train".

The images are made up from a fixed seed (3x32x32, 10 classes: no download), so a run takes
seconds. Run it as ``python train.py --epochs 2`` (image pytorch-2, mode single).

Every step prints the line the console's performance check reads::

    this iteration hardware time is 12.345 and e2e time is 15.678 ms.

Checkpoints go to ``--output`` (default: $CONSOLE_OUTPUT_DIR, else ``outputs`` in the
working folder, which is /workspace/outputs in a job) as ``checkpoint-<step>.pt``; a run
resumes from the newest one there. TensorBoard scalars (loss, accuracy, step time) go to
``<output>/tensorboard``. SIGTERM (stop, expiry, a hardware fault) saves a checkpoint and
exits with 143, so that the next run resumes where this one stopped.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.tensorboard import SummaryWriter

IMAGES, CLASSES = 256, 10
CHECKPOINT = re.compile(r"checkpoint-(\d+)\.pt")
STOPPED_EXIT_CODE = 128 + signal.SIGTERM


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Train a tiny ResNet on made-up CIFAR data.")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=0, help="total steps (overrides --epochs)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per step (demos)")
    parser.add_argument("--output", default=os.environ.get("CONSOLE_OUTPUT_DIR") or "outputs")
    parser.add_argument("--keep", type=int, default=3, help="checkpoints to keep")
    return parser.parse_args(argv)


class Block(nn.Module):
    """A basic residual block: two 3x3 convolutions and a shortcut."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def tiny_resnet():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        Block(8, 8, 1), Block(8, 16, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, CLASSES),
    )  # fmt: skip


def dataset():
    """The same images and labels every run: labels from a fixed random linear "teacher"
    over coarse colour features, so that there is something to learn."""
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(IMAGES, 3, 32, 32, generator=generator)
    features = F.avg_pool2d(images, 8).flatten(1)
    teacher = torch.randn(features.shape[1], CLASSES, generator=generator)
    return images, (features @ teacher).argmax(dim=1)


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


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = tiny_resnet()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    output = Path(args.output)
    step = 0
    newest = newest_checkpoint(output)
    if newest is not None:
        state = torch.load(newest, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        print(f"resumed from {os.path.abspath(newest)} (step {step})", flush=True)
    else:
        print(f"no checkpoint in {os.path.abspath(output)}: starting from step 0", flush=True)
    images, labels = dataset()
    steps_per_epoch = max(1, IMAGES // args.batch_size)
    total = args.steps or args.epochs * steps_per_epoch
    writer = SummaryWriter(str(output / "tensorboard"))
    print(f"training: tiny ResNet, {steps_per_epoch} steps per epoch, steps {step}..{total}")
    while step < total:
        began = time.perf_counter()
        epoch, within = divmod(step, steps_per_epoch)
        order = torch.randperm(IMAGES, generator=torch.Generator().manual_seed(epoch))
        index = order[within * args.batch_size : (within + 1) * args.batch_size]
        compute = time.perf_counter()
        optimizer.zero_grad()
        logits = model(images[index])
        loss = F.cross_entropy(logits, labels[index])
        loss.backward()
        optimizer.step()
        hardware_ms = (time.perf_counter() - compute) * 1000
        step += 1
        time.sleep(args.sleep)
        e2e_ms = (time.perf_counter() - began) * 1000
        accuracy = (logits.argmax(1) == labels[index]).float().mean().item()
        print(f"step {step}/{total} epoch {epoch + 1} loss {loss.item():.4f} acc {accuracy:.2f}")
        print(f"this iteration hardware time is {hardware_ms:.3f} and e2e time is {e2e_ms:.3f} ms.",
              flush=True)  # fmt: skip
        writer.add_scalar("train/loss", loss.item(), step)
        writer.add_scalar("train/accuracy", accuracy, step)
        writer.add_scalar("time/e2e_ms", e2e_ms, step)
        if stop or step % steps_per_epoch == 0 or step == total:
            path = save(output, step, model, optimizer, args.keep)
            print(f"saved {os.path.abspath(path)}", flush=True)
        if stop:
            print(f"stopped by SIGTERM at step {step}; the next run resumes from here", flush=True)
            writer.close()
            return STOPPED_EXIT_CODE
    writer.close()
    print(f"done: {step} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

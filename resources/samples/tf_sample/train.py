"""Multi-worker training with TensorFlow on CPU: the demo algorithm "tf-sample".

A small MLP on a made-up classification task (fixed seed: no download). The workers find
each other through the TF_CONFIG variable the console sets on each of them (image
tensorflow-2, mode TensorFlow); every replica runs the same command::

    python /workspace/algorithm/train.py --steps 20

With 0 parameter servers it trains with ``MultiWorkerMirroredStrategy``: every worker
computes the gradients of its share of the batch and the strategy averages them
(AllReduce). Alone (no TF_CONFIG) it trains as one worker. With parameter servers
(TF_CONFIG with "ps" tasks) it trains asynchronously, between-graph, with the model's
variables on the parameter servers: see ps_training.py, beside this file.

Every step prints the line the console's performance check reads::

    this iteration hardware time is 1.234 and e2e time is 2.345 ms.

The first worker writes checkpoints (``tf.train.CheckpointManager``) to ``--output``
(default: $CONSOLE_OUTPUT_DIR, else ``outputs``, which is /workspace/outputs in a job) and
TensorBoard scalars to ``<output>/tensorboard``; a run resumes from the newest checkpoint.
SIGTERM saves a checkpoint and exits with 143.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up notices

import tensorflow as tf

SAMPLES, FEATURES, CLASSES, HIDDEN = 2048, 32, 4, 64
STOPPED_EXIT_CODE = 128 + signal.SIGTERM
MEAN = tf.VariableAggregation.MEAN


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Train a tiny MLP on several TF workers.")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="per worker")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds per step (demos)")
    parser.add_argument("--output", default=os.environ.get("CONSOLE_OUTPUT_DIR") or "outputs")
    parser.add_argument("--save-every", type=int, default=10)
    return parser.parse_args(argv)


class Mlp(tf.Module):
    """Two dense layers as plain variables. Their MEAN aggregation makes an update that
    each worker applies in its replica context the average of all workers' updates."""

    def __init__(self):
        super().__init__()
        init = tf.random.stateless_normal
        self.w1 = tf.Variable(init([FEATURES, HIDDEN], seed=[1, 0]) * 0.2, aggregation=MEAN)
        self.b1 = tf.Variable(tf.zeros([HIDDEN]), aggregation=MEAN)
        self.w2 = tf.Variable(init([HIDDEN, CLASSES], seed=[2, 0]) * 0.2, aggregation=MEAN)
        self.b2 = tf.Variable(tf.zeros([CLASSES]), aggregation=MEAN)
        self.step = tf.Variable(
            0, dtype=tf.int64, aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA
        )

    def __call__(self, x):
        return tf.nn.relu(x @ self.w1 + self.b1) @ self.w2 + self.b2


def own_ports(config: dict) -> dict:
    """On the console's own machine (its local backend) every task is a loopback address
    of one machine, all with the job's one port, and TensorFlow listens on that port on
    every address: the second task could not start. Each task then gets a port of its own:
    worker i the port + i, then parameter server j the port + the number of workers + j.
    Every task rewrites the same way, so they still agree. On a cluster (other hosts)
    nothing changes. Returns a new config; the one given is left as it is."""
    cluster = config.get("cluster", {})
    jobs = [job for job in ("worker", "ps") if job in cluster]
    hosts = [address.rpartition(":") for job in jobs for address in cluster[job]]
    if len(hosts) < 2 or not all(host.startswith("127.") for host, _, _ in hosts):
        return config
    if len({port for _, _, port in hosts}) != 1:
        return config
    port, rewritten = int(hosts[0][2]), dict(cluster)
    for job in jobs:  # workers first, then parameter servers
        tasks = [address.rpartition(":")[0] for address in cluster[job]]
        rewritten[job] = [f"{host}:{port + i}" for i, host in enumerate(tasks)]
        port += len(tasks)
    return {**config, "cluster": rewritten}


def made_up_data():
    """The inputs and labels, the same on every worker and every run."""
    generator = tf.random.Generator.from_seed(0)
    inputs = generator.normal([SAMPLES, FEATURES])
    labels = tf.argmax(inputs @ generator.normal([FEATURES, CLASSES]), axis=1)
    return inputs, labels


def report(writer, step: int, steps: int, loss: float, hardware_ms: float, e2e_ms: float) -> None:
    """The chief's lines of a step (the console's performance watch reads the second) and
    its TensorBoard scalars."""
    print(f"step {step}/{steps} loss {loss:.4f}")
    print(f"this iteration hardware time is {hardware_ms:.3f} and e2e time is "
          f"{e2e_ms:.3f} ms.", flush=True)  # fmt: skip
    with writer.as_default():
        tf.summary.scalar("train/loss", loss, step=step)
        tf.summary.scalar("time/e2e_ms", e2e_ms, step=step)


def parameter_server_training(args, config: dict, stop: list) -> int:
    # Beside this file, imported only here: AllReduce training does not need it.
    import ps_training

    config = own_ports(config)
    role = config.get("task", {}).get("type")
    if role == "ps":
        return ps_training.serve(args, config, stop)
    if role != "worker":
        print(f"tf-sample: a task of type {role!r} has no part in parameter-server training "
              "(only 'ps' and 'worker' do)", file=sys.stderr, flush=True)  # fmt: skip
        return 2
    return ps_training.train(args, config, stop, Mlp, made_up_data, report)


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster, task = config.get("cluster", {}), config.get("task", {})
    if cluster.get("ps"):
        return parameter_server_training(args, config, stop)
    if config:
        os.environ["TF_CONFIG"] = json.dumps(own_ports(config))
    return all_reduce_training(args, int(task.get("index", 0)), stop)


def restore(args, checkpoint, model, chief: bool) -> None:
    """Every worker restores the newest checkpoint, if there is one; the chief says which."""
    newest = tf.train.latest_checkpoint(args.output)
    if newest:
        checkpoint.restore(newest)
        if chief:
            print(f"resumed from {os.path.abspath(newest)} (step {int(model.step.numpy())})")
    elif chief:
        print(f"no checkpoint in {os.path.abspath(args.output)}: starting from step 0")


def step_function(strategy, model, lr: float):
    """One synchronous step of every worker: each applies the gradients of its share of the
    batch, which the variables' MEAN aggregation averages. Returns the mean loss and how
    many workers were asked to stop."""

    @tf.function
    def train_step(x, y, stop_flag):
        def replica_step(x, y, stop_flag):
            with tf.GradientTape() as tape:
                logits = model(x)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
                )
            variables = [model.w1, model.b1, model.w2, model.b2]
            for variable, grad in zip(variables, tape.gradient(loss, variables), strict=True):
                variable.assign_sub(lr * grad)
            model.step.assign_add(1)
            return loss, stop_flag

        loss, flag = strategy.run(replica_step, args=(x, y, stop_flag))
        ops = tf.distribute.ReduceOp
        # A stop asked on any worker stops all of them at the same step.
        return strategy.reduce(ops.MEAN, loss, None), strategy.reduce(ops.SUM, flag, None)

    return train_step


def all_reduce_training(args, index: int, stop: list) -> int:
    """MultiWorkerMirroredStrategy over the workers TF_CONFIG names (alone without it)."""
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync
    chief = index == 0
    with strategy.scope():
        model = Mlp()
    checkpoint = tf.train.Checkpoint(model=model)
    # Every worker takes part in a save; only the first one's copy is kept.
    folder = args.output if chief else tempfile.mkdtemp(prefix="tf-sample-")
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3)
    restore(args, checkpoint, model, chief)
    inputs, labels = made_up_data()
    train_step = step_function(strategy, model, args.lr)
    writer = (
        tf.summary.create_file_writer(os.path.join(args.output, "tensorboard")) if chief else None
    )
    step = int(model.step.numpy())
    if chief:
        who = f"{workers} TensorFlow worker{'s' if workers > 1 else ''}"
        print(f"training: {who}, steps {step}..{args.steps}", flush=True)
    while step < args.steps:
        began = time.perf_counter()
        order = tf.random.experimental.stateless_shuffle(tf.range(SAMPLES), seed=[step, 0])
        batch = order[index * args.batch_size : (index + 1) * args.batch_size]
        x, y = tf.gather(inputs, batch), tf.gather(labels, batch)
        compute = time.perf_counter()
        loss, stopping = train_step(x, y, tf.constant(1 if stop else 0))
        loss, stopping = float(loss), int(stopping) > 0  # waits for the step to finish
        hardware_ms = (time.perf_counter() - compute) * 1000
        step += 1
        time.sleep(args.sleep)
        e2e_ms = (time.perf_counter() - began) * 1000
        if chief:
            report(writer, step, args.steps, loss, hardware_ms, e2e_ms)
        if stopping or step % args.save_every == 0 or step == args.steps:
            path = manager.save(checkpoint_number=step)
            if chief:
                print(f"saved {os.path.abspath(path)}", flush=True)
        if stopping:
            if chief:
                print(f"stopped by SIGTERM at step {step}", flush=True)
            break
    if writer is not None:
        writer.close()
    if not chief:
        shutil.rmtree(folder, ignore_errors=True)
    if stop:
        return STOPPED_EXIT_CODE
    if chief:
        print(f"done: {step} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

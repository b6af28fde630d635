"""Parameter-server training for train.py: what it runs when TF_CONFIG has "ps" tasks (image
tensorflow-2, mode TensorFlow, parameter servers 1 or more).

Asynchronous and between-graph, as classic TensorFlow parameter-server training:

* a parameter server (task "ps") starts a ``tf.distribute.Server`` and serves until it is
  stopped (SIGTERM: exit code 143); the model's variables live in its memory;
* each worker connects to the parameter servers (never to the other workers), finds the
  model's variables there under names every worker shares, and loops on its own: pull the
  parameters, compute the gradients of one batch, push the update. No worker waits for
  another: an update may be computed from parameters another worker has just changed;
* a step counter on the first parameter server hands out the step numbers, so the workers
  together make ``--steps`` steps, and each stops once every step is handed out;
* worker 0, the chief, puts the parameters on the servers first (from the newest checkpoint
  in ``--output``, if any; the others wait for it), and is the one that prints, writes
  TensorBoard scalars and saves checkpoints (the same files as AllReduce training: either
  kind of run resumes from the other's). SIGTERM saves a checkpoint and exits with 143.

A stopped job has every task stopped at once, but the chief's checkpoint is read from the
servers: a server asked to stop serves on while the chief holds it (a flag the chief sets on
every server and removes when it has saved), for at most ``HOLD_SECONDS`` (+ ``--sleep``).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import NoReturn

import tensorflow as tf

STOPPED_EXIT_CODE = 128 + signal.SIGTERM
# The shared variables' names on the parameter servers. Each process's own tf.Variable is
# private to it even when placed on a server: a name is what lets the workers share one.
PREFIX = "tf-sample/"
TRAINED = ("w1", "b1", "w2", "b2")
HOLD_SECONDS = 10.0  # a chief that has not let go by then is not coming back


def stopped() -> NoReturn:
    """Exit at once: on its way out TensorFlow would spend seconds trying to close its
    sessions on servers that are being stopped too."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(STOPPED_EXIT_CODE)


def serve(args, config: dict, stop: list) -> NoReturn:
    index = int(config["task"].get("index", 0))
    device = f"/job:ps/task:{index}"
    spec = tf.train.ClusterSpec(config["cluster"])
    server = tf.distribute.Server(spec, job_name="ps", task_index=index, protocol="grpc")
    # Whether the chief holds this server, asked in a session of this process (filtered to
    # this task, or it would wait for every task of the cluster).
    with tf.Graph().as_default():
        with tf.device(device):
            flag = tf.raw_ops.VarHandleOp(dtype=tf.int64, shape=[], shared_name=PREFIX + "held")
            held = tf.raw_ops.VarIsInitializedOp(resource=flag)
        options = tf.compat.v1.ConfigProto(device_filters=[device])
        session = tf.compat.v1.Session(server.target, config=options)
    address = config["cluster"]["ps"][index]
    print(f"parameter server {index}: serving at {address} until stopped", flush=True)
    # The server's own threads serve; this one waits for SIGTERM (the console stops the
    # parameter servers once every worker has ended).
    while not stop:
        time.sleep(0.2)
    # Stopped with the job while training: serve on until the chief has saved.
    deadline = time.monotonic() + HOLD_SECONDS + args.sleep
    while session.run(held) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"parameter server {index}: stopped", flush=True)
    stopped()


def variable_handle(name: str, dtype, shape, device: str):
    with tf.device(device):
        return tf.raw_ops.VarHandleOp(dtype=dtype, shape=shape, shared_name=PREFIX + name)


class Shared:
    """What the workers share on the parameter servers: the model's variables (spread over
    the servers), two counters on the first (steps handed out, steps done) and the chief's
    flag on each. ``local`` is this worker's copy of the model (a ``train.Mlp``)."""

    def __init__(self, local, servers: int, steps: int):
        self.local = [getattr(local, name) for name in TRAINED]
        self.servers = [f"/job:ps/task:{i}" for i in range(servers)]
        self.devices = [self.servers[i % servers] for i in range(len(TRAINED))]
        self.handles = [
            variable_handle(name, variable.dtype, variable.shape, device)
            for name, variable, device in zip(TRAINED, self.local, self.devices, strict=True)
        ]
        self.counter = self.servers[0]
        self.step = variable_handle("step", tf.int64, [], self.counter)
        self.done = variable_handle("done", tf.int64, [], self.counter)
        self.held = [variable_handle("held", tf.int64, [], device) for device in self.servers]

        @tf.function
        def claim():
            # One atomic operation on the server: no two workers get the same step, and an
            # OutOfRangeError once all are handed out. (The handle is made in the function:
            # the operation needs its type, which only a handle made in a graph carries.)
            with tf.device(self.counter):
                step = tf.raw_ops.VarHandleOp(dtype=tf.int64, shape=[], shared_name=PREFIX + "step")
                return tf.raw_ops.ResourceCountUpTo(resource=step, limit=steps, T=tf.int64)

        self._claim = claim

    def publish(self, step: int) -> None:
        """The chief's parameters become everyone's. The servers are held first; the step
        counter is set last, as the other workers wait for it."""
        one = tf.constant(1, tf.int64)
        for flag, device in zip(self.held, self.servers, strict=True):
            with tf.device(device):
                tf.raw_ops.AssignVariableOp(resource=flag, value=one)
        for handle, variable, device in zip(self.handles, self.local, self.devices, strict=True):
            with tf.device(device):
                tf.raw_ops.AssignVariableOp(resource=handle, value=variable.read_value())
        with tf.device(self.counter):
            tf.raw_ops.AssignVariableOp(resource=self.done, value=tf.constant(step, tf.int64))
            tf.raw_ops.AssignVariableOp(resource=self.step, value=tf.constant(step, tf.int64))

    def release(self) -> None:
        """The chief needs the servers no more: they may stop."""
        for flag, device in zip(self.held, self.servers, strict=True):
            with tf.device(device):
                tf.raw_ops.DestroyResourceOp(resource=flag, ignore_lookup_error=True)
                # Waits for the removal (operations on a server run in order).
                tf.raw_ops.VarIsInitializedOp(resource=flag).numpy()

    def ready(self) -> bool:
        with tf.device(self.counter):
            return bool(tf.raw_ops.VarIsInitializedOp(resource=self.step))

    def claim(self) -> int:
        """The next step's number (from 1), or OutOfRangeError."""
        return int(self._claim()) + 1

    def pull(self) -> None:
        for handle, variable in zip(self.handles, self.local, strict=True):
            variable.assign(tf.raw_ops.ReadVariableOp(resource=handle, dtype=variable.dtype))

    def push(self, updates) -> None:
        for handle, update, device in zip(self.handles, updates, self.devices, strict=True):
            with tf.device(device):
                tf.raw_ops.AssignSubVariableOp(resource=handle, value=update)
        with tf.device(self.counter):
            tf.raw_ops.AssignAddVariableOp(resource=self.done, value=tf.constant(1, tf.int64))

    def steps_done(self) -> int:
        with tf.device(self.counter):
            return int(tf.raw_ops.ReadVariableOp(resource=self.done, dtype=tf.int64))


def train(args, config: dict, stop: list, model_class, made_up_data, report) -> int:
    """One worker's loop. ``model_class()`` makes its local copy of the model,
    ``made_up_data()`` the inputs and labels (both after connecting: what was made before
    is lost when TensorFlow connects); ``report`` prints and records a step (the chief)."""
    cluster, index = config["cluster"], int(config["task"].get("index", 0))
    workers, servers = cluster["worker"], cluster["ps"]
    chief = index == 0
    # Only the parameter servers and this worker: the workers never wait for one another.
    spec = tf.train.ClusterSpec({"ps": servers, "worker": {index: workers[index]}})
    tf.config.experimental_connect_to_cluster(spec, job_name="worker", task_index=index)
    model = model_class()
    inputs, labels = made_up_data()
    shared = Shared(model, len(servers), args.steps)
    checkpoint = tf.train.Checkpoint(model=model)
    manager = tf.train.CheckpointManager(checkpoint, args.output, max_to_keep=3) if chief else None
    if chief:
        restore(args, checkpoint, model)
        shared.publish(int(model.step.numpy()))
    else:
        wait_for_chief(shared, stop)

    def save(step: int) -> None:
        shared.pull()  # what the servers have: every worker's updates
        model.step.assign(step)
        path = manager.save(checkpoint_number=step)
        print(f"saved {os.path.abspath(path)}", flush=True)

    gradients = gradients_of(model)
    step = saved = int(model.step.numpy())
    writer = start_writing(args, len(workers), len(servers), step) if chief else None
    made = 0
    while not stop:
        began = time.perf_counter()
        try:
            claimed, loss, compute = one_step(args, shared, inputs, labels, gradients)
        except tf.errors.OutOfRangeError:
            break  # every step is handed out
        except tf.errors.OpError:
            if not stop or chief:
                raise
            break  # stopped: the servers may be gone already
        step, made = claimed, made + 1
        hardware_ms = (time.perf_counter() - compute) * 1000
        time.sleep(args.sleep)
        e2e_ms = (time.perf_counter() - began) * 1000
        if chief:
            report(writer, step, args.steps, loss, hardware_ms, e2e_ms)
            if step // args.save_every > saved // args.save_every:
                save(step)
                saved = step
    if chief:
        step = finish(args, stop, shared, save, step, saved)
        writer.close()
        shared.release()
    return end(args, stop, index, chief, step, made)


def restore(args, checkpoint, model) -> None:
    """The chief's model from the newest checkpoint in ``--output``, if there is one."""
    newest = tf.train.latest_checkpoint(args.output)
    if newest:
        checkpoint.restore(newest)
        print(f"resumed from {os.path.abspath(newest)} (step {int(model.step.numpy())})")
    else:
        print(f"no checkpoint in {os.path.abspath(args.output)}: starting from step 0")


def wait_for_chief(shared: Shared, stop: list) -> None:
    """Until the chief has put the parameters on the servers (or the job is stopped)."""
    while not shared.ready():  # (a first operation on a server waits for it to be up)
        if stop:
            stopped()
        time.sleep(0.1)


def gradients_of(model):
    """The loss of a batch and its gradients for the model's trained variables."""
    variables = [getattr(model, name) for name in TRAINED]

    @tf.function
    def gradients(x, y):
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        return loss, tape.gradient(loss, variables)

    return gradients


def start_writing(args, workers: int, servers: int, step: int):
    """The chief's TensorBoard writer, and its first line."""
    writer = tf.summary.create_file_writer(os.path.join(args.output, "tensorboard"))
    who = f"{workers} TensorFlow worker{'s' if workers > 1 else ''}"
    servers_said = f"{servers} parameter server{'s' if servers > 1 else ''}"
    print(f"training: {who} and {servers_said} (asynchronous), steps {step}..{args.steps}",
          flush=True)  # fmt: skip
    return writer


def one_step(args, shared: Shared, inputs, labels, gradients) -> tuple[int, float, float]:
    """Claim a step, pull the parameters, push the update of the step's batch. Returns the
    step, its loss and when its computation began (OutOfRangeError once every step is
    handed out)."""
    claimed = shared.claim()
    # Every step its own batch: the step number picks it, whichever worker runs it.
    order = tf.random.experimental.stateless_shuffle(
        tf.range(inputs.shape[0]), seed=[claimed - 1, 0]
    )
    batch = order[: args.batch_size]
    x, y = tf.gather(inputs, batch), tf.gather(labels, batch)
    compute = time.perf_counter()
    shared.pull()  # the newest parameters, whatever the other workers pushed
    loss, grads = gradients(x, y)
    shared.push([args.lr * grad for grad in grads])
    return claimed, float(loss), compute


def finish(args, stop: list, shared: Shared, save, step: int, saved: int) -> int:
    """The chief's last checkpoint, once every update has arrived; the step it is at."""
    # The last steps may still be on their way from the other workers: the final
    # checkpoint has every update.
    while not stop and shared.steps_done() < args.steps:
        time.sleep(0.05)
    if not stop:
        step = max(step, args.steps)  # (a run resumed past --steps has nothing to do)
    if step != saved:
        save(step)
    return step


def end(args, stop: list, index: int, chief: bool, step: int, made: int) -> int:
    """The worker's last words: exits at once (143) when stopped, else returns 0."""
    if stop:
        if chief:
            print(f"stopped by SIGTERM at step {step}", flush=True)
        stopped()
    print(f"worker {index}: made {made} of the {args.steps} steps", flush=True)
    if chief:
        print(f"done: {step} steps", flush=True)
    return 0

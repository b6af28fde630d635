"""The fake API server on its own, for a benchmark that must not count its CPU as the
console's: ``python -m tests.resources.k8s_fake --port 8765 --jobs 1000``.

Prints one JSON line (``url``, ``token``, ``namespace``, ``jobs``: the names served) once it
serves, then serves until interrupted (SIGINT or SIGTERM)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from tests.resources.k8s_fake.objects import TOKEN, node
from tests.resources.k8s_fake.seed import seed_running
from tests.resources.k8s_fake.server import FakeKubernetes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.resources.k8s_fake")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--jobs", type=int, default=0, help="Volcano jobs already running")
    parser.add_argument(
        "--names",
        default="bench-{i:05d}",
        help="their names, a format of i (from 1); e.g. job-{i}-1",
    )
    parser.add_argument("--tasks", type=int, default=1, help="pods per job")
    parser.add_argument("--nodes", type=int, default=0, help="GPU nodes (0: one per 8 jobs)")
    parser.add_argument("--namespace", default="ml")
    parser.add_argument("--token", default=TOKEN)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--log-lines", type=int, default=3, help="log lines per pod")
    parser.add_argument(
        "--no-controller",
        action="store_true",
        help="no background Volcano/scheduler/kubelet (a frozen cluster)",
    )
    args = parser.parse_args(argv)

    count = args.nodes or max(2, -(-args.jobs * args.tasks // 8))
    nodes = [
        node(
            f"gpu-{i:04d}",
            cpu="128",
            memory="1024Gi",
            extended={"nvidia.com/gpu": "8"},
            labels={"nvidia.com/gpu.product": "A100"},
        )
        for i in range(1, count + 1)
    ]
    fake = FakeKubernetes(nodes, token=args.token, auto=not args.no_controller, port=args.port)
    fake.time_scale = args.time_scale
    fake.script("", logs=[f"step {i}" for i in range(1, args.log_lines + 1)])
    names = [args.names.format(i=i) for i in range(1, args.jobs + 1)]
    seed_running(fake, names, args.namespace, args.tasks)
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    with fake:
        print(
            json.dumps(
                {
                    "url": fake.url,
                    "token": fake.token,
                    "namespace": args.namespace,
                    "jobs": len(names),
                    "first": names[:1],
                }
            ),
            flush=True,
        )
        done.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

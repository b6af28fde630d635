"""``make bench``: measured figures, printed as a table.

Each benchmark is a function in a module of this package, registered in ``BENCHMARKS``;
``make bench BENCH_ARGS="cold_start"`` runs only the named ones.
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.bench import (
    api,
    cluster,
    execution,
    faults,
    foundation,
    jobs,
    kubernetes,
    load,
    queue,
    scaling,
    scheduler,
    tools,
)

BENCHMARKS = {
    "cold_start": foundation.cold_start,
    "test_suite": foundation.test_suite,
    "cluster": cluster.cluster_page,
    "jobs": jobs.job_list,
    "queue": queue.queue_pages,
    "scheduler_core": scheduler.core_figures,
    "admission": scheduler.admission_with_writes,
    "prediction": scheduler.prediction_page,
    "scaling": scaling.scaling,
    "execution": execution.execution,
    "k8s_job_calls": kubernetes.api_calls_per_job,
    "k8s_sync": kubernetes.sync_pass_1000,
    "k8s_submit": kubernetes.admission_to_created,
    "faults": faults.fault_recovery,
    "tools": tools.tool_pages,
    "load": load.under_load,
    "api": api.api,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="make bench")
    parser.add_argument("names", nargs="*", help=f"benchmarks to run: {', '.join(BENCHMARKS)}")
    args = parser.parse_args()
    unknown = set(args.names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    names = args.names or list(BENCHMARKS)
    results: list[tuple[str, str]] = []
    for name in names:
        started = time.monotonic()
        print(f"… {name}", file=sys.stderr, flush=True)
        for label, figure in BENCHMARKS[name]():
            results.append((label, figure))
            print(f"  {label}: {figure}", file=sys.stderr, flush=True)
        print(f"  ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)
    width = max(len(label) for label, _ in results)
    print()
    for label, figure in results:
        print(f"{label:<{width}}  {figure}")


if __name__ == "__main__":
    main()

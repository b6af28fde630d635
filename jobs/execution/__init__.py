"""Running admitted jobs through the backend (SPEC E1, F7, O2; DESIGN "Job lifecycle").

* ``workloads``: a job's launch plan plus its allocations -> the backend's Workload.
* ``runs``: start an attempt, follow it (poll, expiry, usage samples), stop it.
* ``settle``: an attempt's end and what it makes of its job (settled once, even after a
  worker died between the two).
* ``step_events``: what the backend did around the job's command (data preparation,
  lifecycle scripts), told once as events.
* ``cluster_events``: why a cluster keeps a job waiting, and losing or finding the cluster
  again, told once as events.
* ``stopping``: a user's stop (SIGTERM now, SIGKILL after the graceful time).
* ``charts``: resource use as server-rendered SVG.

The Celery tasks that drive ``runs`` are in jobs.tasks; the admission pass hands the jobs it
admitted to :func:`runs.launch` through jobs.hooks.
"""

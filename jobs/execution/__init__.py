"""Running admitted jobs through the backend (SPEC E1, F7, O2; DESIGN "Job lifecycle").

* ``workloads``: a job's launch plan plus its allocations -> the backend's Workload.
* ``runs``: start an attempt, follow it (poll, expiry, usage samples), stop it, end the job.
* ``charts``: resource use as server-rendered SVG.

The Celery tasks that drive ``runs`` are in jobs.tasks; the admission pass hands the jobs it
admitted to :func:`runs.launch` through jobs.hooks.
"""

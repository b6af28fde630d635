"""The local backend: jobs as process groups on this machine's configured nodes (see
backend.py; runner.py starts, follows and stops them; supervisor.py outlives the worker)."""

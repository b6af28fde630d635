"""Cluster adapters: what the console asks of wherever jobs run (see base.py).

The local backend (this machine) serves the nodes of no cluster; each Kubernetes cluster an
admin adds has a backend of its own (resources.clusters).
"""

from __future__ import annotations

from functools import cache


@cache
def local_backend():
    """The local backend (one instance per process). Not named ``local``: importing the
    ``local`` module below would replace a package attribute of that name."""
    from resources.backends.local.backend import LocalBackend

    return LocalBackend()

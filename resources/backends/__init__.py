"""Cluster adapters: what the console asks of wherever jobs run (see base.py)."""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

BACKENDS = {
    "local": "resources.backends.local.LocalBackend",
    "kubernetes": "resources.backends.kubernetes.KubernetesBackend",
}


@cache
def active():
    """The backend named by the EXECUTION_BACKEND setting (one instance per process)."""
    return import_string(BACKENDS[settings.EXECUTION_BACKEND])()

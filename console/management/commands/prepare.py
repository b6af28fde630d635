"""``manage.py prepare``: what `make run` does before its processes start, in one process.

The database migrated, the local backend's runtimes made (instant once made; one that cannot
be made is reported and stops nothing) and the demo seeded. One process rather than three
saves two starts of Django on every `make run`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Migrate, make the local runtimes (local backend only) and seed the demo data."

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        if settings.EXECUTION_BACKEND == "local":
            # Before the seed, which gives each demo image its runtime (PyTorch, TensorFlow,
            # DeepSpeed).
            call_command("make_runtime")
        call_command("seed_demo")

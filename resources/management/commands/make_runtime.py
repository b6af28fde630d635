import time

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from resources import runtimes


class Command(BaseCommand):
    help = (
        "Create the PyTorch CPU runtime the local backend runs demo jobs with "
        "(VAR_DIR/runtimes/torch-cpu; idempotent, instant once made)."
    )

    def handle(self, *args, **options):
        began = time.monotonic()
        result = runtimes.ensure_runtime(log=self.stdout.write)
        if not result.ready:
            # Not an error: the console runs without it, only jobs that import torch fail.
            self.stdout.write(
                self.style.WARNING(
                    f"PyTorch runtime not created: {result.status}; "
                    "demo training jobs will fail to import torch"
                )
            )
            return
        took = (
            f" (created in {time.monotonic() - began:.0f} s)" if result.status == "created" else ""
        )
        self.stdout.write(f"PyTorch runtime: {result.folder}{took}")
        try:
            attached = runtimes.attach_to_demo_image(result.folder)
        except DatabaseError:
            # No tables yet (run before migrate): seed_demo attaches it once they exist.
            return
        if attached:
            self.stdout.write(f"Demo image {runtimes.DEMO_IMAGE} now uses it")

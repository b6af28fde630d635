import time
from concurrent.futures import ThreadPoolExecutor

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from resources.inventory import runtime_images, runtimes


class Command(BaseCommand):
    help = (
        "Create the Python runtimes the local backend runs the demo images' jobs with "
        "(RUNTIMES_DIR/<name>: torch-cpu, tensorflow-cpu, deepspeed-cpu; idempotent, instant "
        "once made). A runtime this machine cannot have is reported and skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "names", nargs="*", metavar="name",
            choices=[d.name for d in runtimes.RUNTIMES], help="only these runtimes",
        )  # fmt: skip

    def handle(self, *args, names=(), **options):
        chosen = [d for d in runtimes.RUNTIMES if not names or d.name in names]
        # Side by side: each is pip downloading and unpacking into a folder of its own, so
        # three take about as long as the longest (DeepSpeed, which compiles an op). Each
        # says when it begins; the outcomes follow in a fixed order.
        with ThreadPoolExecutor(max_workers=len(chosen) or 1) as pool:
            made = list(pool.map(self.make, chosen))
        for definition, (result, seconds) in zip(chosen, made, strict=True):
            self.report(definition, result, seconds)
            if result.ready:
                self.attach(definition, result)

    def make(self, definition: runtimes.Definition) -> tuple[runtimes.Result, float]:
        began = time.monotonic()
        result = runtimes.ensure(definition, log=self.stdout.write)
        return result, time.monotonic() - began

    def report(self, definition: runtimes.Definition, result: runtimes.Result, seconds: float):
        if not result.ready:
            # Not an error: the console runs without it; only these images' jobs cannot run
            # on this machine's nodes (the job form says so).
            images = ", ".join(definition.images)
            self.stdout.write(
                self.style.WARNING(
                    f"{definition.framework} runtime not created: {result.status}; "
                    f"jobs with {images} cannot run on this machine"
                )
            )
            return
        took = f" (created in {seconds:.0f} s)" if result.status == runtimes.CREATED else ""
        self.stdout.write(f"{definition.framework} runtime: {result.folder}{took}")

    def attach(self, definition: runtimes.Definition, result: runtimes.Result) -> None:
        try:
            attached = runtime_images.attach(definition, result.folder)
        except DatabaseError:
            # No tables yet (run before migrate): seed_demo attaches it once they exist.
            return
        for name in attached:
            self.stdout.write(f"Demo image {name} now uses it")

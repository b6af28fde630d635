from importlib import import_module
from importlib.util import find_spec

from django.core.management.base import BaseCommand
from django.db import transaction

# Each app seeds its own part, in dependency order; later parts build on earlier ones.
SEEDERS = ["console.demo", "resources.demo", "jobs.demo"]


class Command(BaseCommand):
    help = "Create the demo users, projects, inventory, catalog and jobs (idempotent)."

    def handle(self, *args, **options):
        seeded: dict = {}
        with transaction.atomic():
            for module_name in SEEDERS:
                if find_spec(module_name) is None:
                    continue
                module = import_module(module_name)
                seeded.update(module.seed(self.stdout.write, **seeded) or {})
        self.stdout.write(self.style.SUCCESS("Demo data is in place."))

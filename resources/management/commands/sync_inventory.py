from django.core.management.base import BaseCommand, CommandError

from resources.backends.base import BackendError
from resources.tasks import sync_from_backend


class Command(BaseCommand):
    help = "Read the nodes of the active backend into the inventory (idempotent)."

    def handle(self, *args, **options):
        try:
            report = sync_from_backend()
        except BackendError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Inventory: {report}")

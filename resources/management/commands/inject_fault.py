"""``manage.py inject_fault NODE KIND [--detail X] [--clear]``: the fault injection page's
form for the shell (drills and scripted demos)."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import translation

from resources.forms.faults import kind_text, outcome
from resources.inventory import faults
from resources.models import FaultKind, Node, NodeFault


class Command(BaseCommand):
    help = (
        "Inject a fault on a node (a state that lasts until cleared, or a kill/freeze of the "
        "job processes there now), or clear the node's faults of that kind with --clear."
    )

    def add_arguments(self, parser):
        parser.add_argument("node", help="the node's name")
        parser.add_argument("kind", choices=FaultKind.values, help="the fault")
        parser.add_argument(
            "--detail", default="", help="a disk (root, shm, cache) or a board index "
            "(empty: all of them); a condition's type (empty: KernelDeadlock); an XID as "
            "board:code (empty: 0:79)",
        )  # fmt: skip
        parser.add_argument(
            "--clear", action="store_true", help="clear the node's active faults of this kind"
        )

    def handle(self, *args, **options):
        # The shell speaks English, whatever the site's default language.
        with translation.override("en"):
            self._handle(options["node"], options["kind"], options["detail"], options["clear"])

    def _handle(self, node: str, kind: str, detail: str, clear: bool) -> None:
        found = Node.objects.live().filter(name=node).first()
        if found is None:
            names = list(Node.objects.live().order_by("name").values_list("name", flat=True))
            known = ", ".join(names[:20]) + (", …" if len(names) > 20 else "")
            raise CommandError(f"No node named {node!r}. Nodes: {known or 'none'}.")
        if clear:
            self._clear(found, kind)
            return
        try:
            fault = faults.inject(found, kind, detail)
        except faults.FaultError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(outcome(fault))

    def _clear(self, node: Node, kind: str) -> None:
        active = list(NodeFault.objects.active().filter(node=node, kind=kind))
        cleared = [fault for fault in active if faults.clear(fault)]
        if not cleared:
            self.stdout.write(f"Nothing to clear on {node.name}: no {kind} fault is in effect.")
            return
        for fault in cleared:
            fault.node = node
            self.stdout.write(f"Cleared {kind_text(fault)} on {node.name}.")

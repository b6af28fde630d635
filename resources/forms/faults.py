"""The fault injection form (platform admins, /settings/faults/) and the words that say what
an injection did, shared by the page and ``manage.py inject_fault``."""

from __future__ import annotations

from collections import defaultdict

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.widgets import word_empty_choices
from resources.inventory import faults
from resources.models import Allocation, FaultKind, Node, NodeFault

# What resources.inventory.faults.inject stores in ``effect`` (English, for logs and the shell).
SENT_TO = "sent to "
NOTHING_RUNS = "no job process runs there"


class NodeChoice(forms.ModelChoiceField):
    """Each node labelled with the jobs that hold resources on it, so that an admin sees
    whose job a fault will hit before injecting it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.jobs: dict[int, list[str]] = {}

    def label_from_instance(self, node: Node) -> str:
        jobs = self.jobs.get(node.pk)
        label = node.name
        if node.isolated_at:
            label += f" ({gettext('isolated')})"
        return f"{label} — {', '.join(jobs)}" if jobs else label


class FaultForm(forms.Form):
    node = NodeChoice(label=_("Node"), queryset=Node.objects.none())
    kind = forms.ChoiceField(label=_("Fault"), choices=FaultKind.choices)
    detail = forms.CharField(
        label=_("Which"), required=False, max_length=20,
        help_text=_("A full disk: root, shm or cache. A failed board: its index (0, 1, …). "
                    "Empty: all of them. A condition: its type (empty: KernelDeadlock). An "
                    "XID: board:code (empty: 0:79)."),
    )  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["node"]
        field.queryset = Node.objects.live().order_by("name")
        # One query for every node's jobs, not one per option.
        jobs = defaultdict(list)
        for node_id, label in (
            Allocation.objects.live()
            .values_list("node_id", "label")
            .distinct()
            .order_by("node_id", "label")
        ):
            jobs[node_id].append(label)
        field.jobs = jobs
        word_empty_choices(self)

    def clean(self):
        data = super().clean()
        node, kind = data.get("node"), data.get("kind")
        if node is not None and kind:
            try:
                data["detail"] = faults.check_detail(kind, data.get("detail", ""), node)
            except faults.FaultError as error:
                self.fault_error(error)
        return data

    def fault_error(self, error: faults.FaultError) -> None:
        # A detail typed wrongly belongs under it; a fault the node cannot have (no boards,
        # processes of a remote cluster) under the fault's kind, where the choice was made.
        typed = (self.data.get(self.add_prefix("detail")) or "").strip()
        self.add_error("detail" if typed else "kind", str(error))

    def inject(self, user) -> NodeFault | None:
        """Inject the cleaned fault; None (with the reason as a field error) when the
        injection refused it."""
        data = self.cleaned_data
        try:
            return faults.inject(data["node"], data["kind"], data["detail"], user)
        except faults.FaultError as error:
            self.fault_error(error)
            return None


def kind_text(fault: NodeFault) -> str:
    """ "Disk full (shm)": the fault and which part of the node."""
    label = str(fault.get_kind_display())
    if not fault.detail:
        return label
    return gettext("%(fault)s (%(which)s)") % {"fault": label, "which": fault.detail}


def effect_text(fault: NodeFault) -> str:
    """What a kill or freeze did, in the reader's language (stored in English)."""
    if fault.effect.startswith(SENT_TO):
        return gettext("sent to %(workloads)s") % {"workloads": fault.effect[len(SENT_TO) :]}
    if fault.effect == NOTHING_RUNS:
        return gettext("no job process runs there")
    return fault.effect


def outcome(fault: NodeFault) -> str:
    """What an injection did, in plain words."""
    node = fault.node.name
    if fault.kind in (FaultKind.KILL, FaultKind.FREEZE):
        hit = fault.effect.startswith(SENT_TO)
        workloads = fault.effect[len(SENT_TO) :]
        if fault.kind == FaultKind.KILL:
            if hit:
                return gettext("Killed (SIGKILL) the job processes on %(node)s: %(workloads)s.") % {
                    "node": node,
                    "workloads": workloads,
                }
            return gettext("No job process runs on %(node)s: nothing was killed.") % {"node": node}
        if hit:
            return gettext("Froze (SIGSTOP) the job processes on %(node)s: %(workloads)s.") % {
                "node": node,
                "workloads": workloads,
            }
        return gettext("No job process runs on %(node)s: nothing was frozen.") % {"node": node}
    return gettext(
        "Injected on %(node)s: %(fault)s. It lasts until you clear it; the node's checks "
        "report it like a real fault."
    ) % {"node": node, "fault": kind_text(fault)}

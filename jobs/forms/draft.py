"""What the queue prediction and the availability panel beside Create read of the job form.

Both answer on every change of the form, from its placement fields only: specs, node count,
priority, pinned nodes, pool, driver, elastic minimum, duration, resume.
``jobs.forms.job.DraftForm`` holds those fields (the job form's own), set up
(:func:`placement_fields`) and checked (the job form's rules on them) by the code the job
form uses, without the rest of the job form (its catalog choices, mounts, names and their
rules), which says nothing about when or where a job would run and cost most of an
answer's time.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from console import limits
from jobs.forms import choices, rules
from jobs.models import Priority

FIELDS = (
    "priority", "mode", "specs", "node_count", "ps_count", "node_names", "driver_version",
    "pool", "elastic", "elastic_min_nodes", "duration_hours", "resume_enabled",
)  # fmt: skip


def placement_fields(form: forms.Form, user, project, caps) -> None:
    """Choices of the placement fields, for the job form and the draft form alike."""
    form.fields["specs"].queryset = choices.specs()
    form.fields["node_names"].queryset = choices.nodes(user, project)
    form.fields["driver_version"].queryset = choices.drivers()
    form.fields["pool"].queryset = choices.pools(project)
    form.fields["duration_hours"].choices = [
        (hours, _("%(n)s h") % {"n": hours}) for hours in caps.durations_hours
    ]
    if not user.is_staff:
        form.fields["priority"].choices = [
            (value, label) for value, label in Priority.choices if value != Priority.VERY_URGENT
        ]


class Draft(forms.Form):
    """The draft form without its fields (jobs.forms.job.DraftForm has them): set up,
    cleaned and checked as the job form's."""

    def __init__(self, *args, user, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.user, self.project = user, project
        self.limits = limits.current()
        placement_fields(self, user, project, self.limits)

    def clean(self):
        data = super().clean()
        # The job form's rules that speak of these fields (and remove a field they refuse
        # from what the prediction reads, as there); the image's are the job form's own.
        rules.check_priority(self, data)
        rules.check_shape(self, data)
        rules.check_placement(self, data)
        return data

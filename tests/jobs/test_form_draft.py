"""The prediction and the availability panel read the job form's placement fields through
DraftForm (jobs/forms/draft.py): the same draft as the whole job form gives, for valid
forms and for forms its rules refuse, whatever else the form holds."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

import pytest
from django.http import QueryDict

from console import limits
from jobs.admission import prediction
from jobs.forms.draft import FIELDS
from jobs.forms.job import DraftForm, JobForm
from jobs.models import Priority
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db


def drafts(post, user, project):
    """The draft each form reads of the same POST (the submit time left out)."""
    post = QueryDict(urlencode(post, doseq=True))  # as a request brings it
    read = []
    for form_class in (JobForm, DraftForm):
        form = form_class(post, user=user, project=project)
        form.is_valid()
        draft = prediction.draft_from(form.cleaned_data, project)
        read.append(draft and replace(draft, submitted_at=0.0))
    return read


CASES = {
    "valid": {},
    "no spec": {"specs": None},
    "gpu, pool": {"specs": ["gpu"], "pool": "pool"},
    "gpu, driver": {"specs": ["gpu"], "driver_version": "driver"},
    "pinned nodes and pool": {"specs": ["gpu"], "node_names": ["gpu-node"], "pool": "pool"},
    "pinned nodes": {"specs": ["gpu"], "node_names": ["gpu-node", "pool-node"]},
    "driver on a CPU spec": {"driver_version": "driver"},
    "single mode, 3 nodes": {"node_count": "3"},
    "pytorch, 3 nodes": {"mode": "pytorch", "node_count": "3"},
    "elastic": {"mode": "pytorch", "node_count": "4", "elastic": "on", "elastic_min_nodes": "2"},
    "elastic minimum above the count": {
        "mode": "pytorch", "node_count": "2", "elastic": "on", "elastic_min_nodes": "5",
    },
    "very urgent by a member": {"priority": str(Priority.VERY_URGENT)},
    "urgent over the cap": {"priority": str(Priority.URGENT)},
    "a duration not offered": {"duration_hours": "7"},
    "resume without a pool": {"resume_enabled": "on"},
    "no name, no image, no command": {"name": "", "image": None, "command": ""},
    "garbage": {"node_count": "many", "specs": ["x"], "pool": "\x00", "priority": "9"},
}  # fmt: skip


READ = {
    "valid": lambda draft, _: draft.priority == Priority.NORMAL and draft.pool is None,
    "no spec": lambda draft, _: draft is None,
    "gpu, pool": lambda draft, inv: draft.pool == inv["pool"].pk,
    "pinned nodes and pool": lambda draft, inv: not draft.node_names and draft.pool,
    "pinned nodes": lambda draft, _: draft.node_names == {"gpu-node", "pool-node"},
    "driver on a CPU spec": lambda draft, _: draft.driver is None,
    "single mode, 3 nodes": lambda draft, _: draft.alternatives[0].nodes == 1,
    "pytorch, 3 nodes": lambda draft, _: draft.alternatives[0].nodes == 3,
    "elastic": lambda draft, _: draft.alternatives[0].min_nodes == 2,
    "very urgent by a member": lambda draft, _: draft.priority == Priority.NORMAL,
    "urgent over the cap": lambda draft, _: draft.priority == Priority.NORMAL,
}


@pytest.mark.parametrize("case", CASES)
def test_the_draft_form_reads_what_the_job_form_reads(alice, vision, inventory, job_post, case):
    cap = limits.current().urgent_jobs_per_project
    for _ in range(cap):  # the project holds as many urgent jobs as it may
        JobFactory(owner=alice, project=vision, priority=Priority.URGENT)
    named = {"gpu": inventory["gpu"].pk, "pool": inventory["pool"].pk,
             "driver": inventory["driver"].pk}  # fmt: skip
    overrides = {
        key: [named.get(v, v) for v in value] if isinstance(value, list)
        else named.get(value, value) if isinstance(value, str) else value
        for key, value in CASES[case].items()
    }  # fmt: skip
    whole, draft = drafts(job_post(**overrides), alice, vision)
    assert whole == draft
    if case in READ:  # what the rules left of the form
        assert READ[case](draft, inventory)


def test_the_draft_form_has_the_job_forms_own_fields():
    for name in FIELDS:
        assert DraftForm.base_fields[name] is JobForm.base_fields[name]
    assert set(DraftForm.base_fields) == set(FIELDS)

"""The job page's Faults section: a summary of the recovery counts and the timeline of the
job's fault records, in both languages, at a constant number of queries."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import translation
from django.utils.translation import gettext_noop

from console.words import said
from jobs.models import FaultRecord
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

NIC_DOWN = gettext_noop("Network interface down on %(nodes)s.")


def page(client, job, **headers) -> str:
    return client.get(f"/jobs/{job.pk}/", **headers).content.decode()


def record(job, **fields) -> FaultRecord:
    values = {
        "item": "nic", "nodes": ["gpu-3"], "message": "NIC down on gpu-3",
        "action": FaultRecord.Action.RESUME, "isolated": True, "used": 1, "allowed": 3,
    }  # fmt: skip
    values.update(fields)
    return FaultRecord.objects.create(job=job, **values)


def test_no_section_without_faults_or_fault_options(client, alice, vision):
    job = JobFactory(owner=alice, project=vision)
    client.force_login(alice)
    assert 'data-testid="faults"' not in page(client, job)


def test_resume_timeline(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, resume_enabled=True, max_resumes=3)
    job.resumes_used = 1
    job.save()
    record(job)
    client.force_login(alice)
    body = page(client, job)
    assert "Checkpoint resume: 1 of 3 used" in body
    timeline = body.split('data-testid="faults"')[1].split("</section>")[0]
    for words in ("item=nic", "NIC down on gpu-3", "on gpu-3", "Resumed from a checkpoint",
                  "node isolated", "resume 1 of 3"):  # fmt: skip
        assert words in timeline, words


def test_restart_and_the_last_one_spent(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, fault_restart_enabled=True, max_restarts=2)
    job.restarts_used = 2
    job.save()
    record(job, item="heartbeat", action=FaultRecord.Action.RESTART, used=1, allowed=2)
    record(job, item="heartbeat", action=FaultRecord.Action.RESTART, used=2, allowed=2)
    record(job, item="exit-code", action=FaultRecord.Action.ERROR, used=2, allowed=2,
           isolated=False, nodes=[])  # fmt: skip
    client.force_login(alice)
    body = page(client, job)
    assert "Fault restart: 2 of 2 used" in body
    assert "restart 1 of 2" in body and body.count("restart 2 of 2") == 2
    assert "Ended as error" in body


def test_options_on_but_no_fault_yet(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, fault_restart_enabled=True, max_restarts=2)
    client.force_login(alice)
    body = page(client, job)
    assert "Fault restart: 0 of 2 used" in body and "No fault so far." in body


def test_without_recovery_a_fault_ends_the_job(client, alice, vision):
    job = JobFactory(owner=alice, project=vision)
    record(job, action=FaultRecord.Action.ERROR, used=0, allowed=0, isolated=False)
    client.force_login(alice)
    body = page(client, job)
    assert "No fault recovery: a fault ends the job as error" in body
    assert " of 0" not in body


def test_in_chinese(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, resume_enabled=True, max_resumes=3)
    job.resumes_used = 1
    job.save()
    message = said(NIC_DOWN, nodes="gpu-3")
    record(job, message=str(message), said=message.as_json())
    client.force_login(alice)
    with translation.override("zh-hans"):
        body = page(client, job, HTTP_ACCEPT_LANGUAGE="zh-hans")
    for words in ("故障", "断点续训：已用 1 次，共 3 次", "已从 checkpoint 续训", "节点已隔离",
                  "续训 1/3", "item=nic"):  # fmt: skip
        assert words in body, words
    assert "Checkpoint resume" not in body


def test_query_count_does_not_grow_with_faults(client, alice, vision):
    job = JobFactory(owner=alice, project=vision, resume_enabled=True, max_resumes=9)
    client.force_login(alice)
    record(job)
    page(client, job)  # warm caches (limits, session)
    with CaptureQueriesContext(connection) as one:
        page(client, job)
    for used in range(2, 8):
        record(job, used=used, allowed=9)
    with CaptureQueriesContext(connection) as seven:
        body = page(client, job)
    assert body.count('data-item="nic"') == 7
    assert len(seven) == len(one)

"""Events and reasons are stored in English and worded in each reader's language."""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext_noop

from console.words import said, wording
from jobs import lifecycle
from jobs.models import JobEvent, Phase, Priority
from tests.jobs.factories import JobFactory


def test_a_said_message_is_english_text_that_remembers_its_words():
    with translation.override("zh-hans"):
        message = said(gettext_noop("Stopped by %(user)s."), user="alice")
    assert message == "Stopped by alice."
    assert message.as_json() == {
        "msgid": "Stopped by %(user)s.",
        "params": {"user": "alice"},
        "translated": [],
    }


def test_each_reader_sees_events_and_reasons_in_their_language(alice, vision):
    job = JobFactory(owner=alice, project=vision)
    with translation.override("zh-hans"):  # whoever triggers it, English is stored
        lifecycle.move(
            job,
            Phase.ERROR,
            said(gettext_noop("Failed: %(reason)s."), reason="worker 1 exited with code 3"),
            reason=said(gettext_noop("Failed: %(reason)s."), reason="worker 1 exited with code 3"),
        )
        lifecycle.record(
            job,
            said(
                gettext_noop("Priority changed from %(old)s to %(new)s by %(user)s."),
                old=Priority.NORMAL.label,
                new=Priority.URGENT.label,
                user="lead",
            ),
        )
    moved, changed = JobEvent.objects.filter(job=job).order_by("id")
    job.refresh_from_db()
    assert moved.message == job.reason == "Failed: worker 1 exited with code 3."
    assert changed.message == "Priority changed from Normal to Urgent by lead."
    with translation.override("zh-hans"):
        assert moved.text == job.reason_words == "运行失败：worker 1 exited with code 3。"
        assert "紧急" in changed.text and "lead" in changed.text
    assert moved.text == "Failed: worker 1 exited with code 3."


def test_free_text_is_shown_as_it_is_and_a_broken_record_never_fails():
    assert wording("Demo job.", None) == "Demo job."
    assert wording("Stopped by x.", {"msgid": "Stopped by %(user)s.", "params": {}}) == (
        "Stopped by x."
    )


def test_a_message_said_inside_another_is_worded_too():
    """Recovery's events put one message inside another ("… Ended as error: %(why)s"): a
    Chinese reader sees both in Chinese, an English one both in English."""
    inner = said(gettext_noop("it has neither checkpoint resume nor fault restart."))
    outer = said(gettext_noop("%(found)s Ended as error: %(why)s"), found="Failed.", why=inner)
    assert (
        str(outer) == "Failed. Ended as error: it has neither checkpoint resume nor fault restart."
    )
    stored = outer.as_json()
    with translation.override("zh-hans"):
        shown = wording(str(outer), stored)
    assert "既未开启断点续训" in shown and "已以错误结束" in shown and "neither" not in shown
    with translation.override("en"):
        assert wording(str(outer), stored) == str(outer)


def test_a_counted_message_takes_the_form_of_its_number():
    """Stored in English with the right form, worded with the reader's plural rules."""
    from console.words import Said, counted

    grown = counted(
        "%(more)s more node is free: growing from %(old)s to %(new)s.",
        "%(more)s more nodes are free: growing from %(old)s to %(new)s.",
        "more",
    )
    one, two = said(grown, more=1, old=1, new=2), said(grown, more=2, old=2, new=4)
    assert one == "1 more node is free: growing from 1 to 2."
    assert two == "2 more nodes are free: growing from 2 to 4."
    stored = two.as_json()
    assert stored["plural"] == list(grown)
    assert Said.from_json(stored).as_json() == stored
    assert wording(two, stored) == two
    with translation.override("zh-hans"):
        assert wording(two, stored) == "又有 2 个节点空闲：从 2 个节点扩容到 4 个节点。"
        assert wording(one, one.as_json()) == "又有 1 个节点空闲：从 1 个节点扩容到 2 个节点。"

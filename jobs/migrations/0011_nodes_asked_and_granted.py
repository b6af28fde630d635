"""The asked and the granted node counts as two fields.

``node_count`` was what the form asked for until admission, then what the run got;
``nodes_requested`` kept the asked count beside it (None on jobs from before it). Now
``nodes_asked`` is always what was asked, and ``nodes_granted`` what admission gave: set
from ``node_count`` for a job that was admitted and is not back in the queue.
"""

from django.db import migrations, models
from django.db.models import F, Q
from django.db.models.functions import Coalesce


def split(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    admitted = Q(admitted_at__isnull=False) & ~Q(phase="queued")
    Job.objects.filter(admitted).update(nodes_granted=F("node_count"))
    Job.objects.update(node_count=Coalesce("nodes_requested", "node_count"))
    _settle(schema_editor)


def join(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    Job.objects.update(nodes_requested=F("node_count"))
    Job.objects.update(node_count=Coalesce("nodes_granted", "node_count"))
    _settle(schema_editor)


def _settle(schema_editor):
    # PostgreSQL refuses to alter a table with checks of deferred constraints still pending
    # from these updates; run them now, as the field is removed in this same transaction
    # when going back.
    schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [("jobs", "0010_tool_message_words")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="nodes_granted",
            field=models.PositiveSmallIntegerField(
                blank=True, null=True, verbose_name="nodes granted"
            ),
        ),
        migrations.RunPython(split, join),
    ]

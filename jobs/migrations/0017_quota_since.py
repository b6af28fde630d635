"""Quota maximums hold jobs back at admission (SPEC G1): when a held job joins the planned
queue, and the queue's change log told of quota changes.

A quota, or a project moved between departments, changes what the queue is planned from:
their tables log changes as the others of migration 0008 do (a statement that changed a
row), so the form's prediction plans again and the admission pass does not skip.
"""

from django.db import migrations, models

EVENTS = (("insert", "INSERT", "NEW"), ("update", "UPDATE", "NEW"), ("delete", "DELETE", "OLD"))
TABLES = ("resources_quota", "console_project")

FORWARD = "".join(
    f"CREATE TRIGGER {table}_queue_{name} AFTER {event} ON {table} "
    f"REFERENCING {side} TABLE AS changed_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION jobs_note_queue_rows_changed();\n"
    for table in TABLES
    for name, event, side in EVENTS
)
BACKWARD = "".join(
    f"DROP TRIGGER {table}_queue_{name} ON {table};\n"
    for table in TABLES
    for name, _event, _side in EVENTS
)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0016_job_name_trigram_index"),
        ("resources", "0008_quotas"),
        ("console", "0003_department"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="quota_since",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]

"""A queued job's standing moves to a narrow table of its own, jobs_standing.

Every pass that admits a job moves the position of every job behind it. Kept on the job, each
such move rewrote the whole job row under sixteen indexes (its trigram index among them) and
the queue's change triggers, which copy every changed row: at 10,000 queued jobs a pass spent
most of a second writing positions. A standing row holds only what the pass writes.

Triggers keep exactly one standing row for each job whose status is *queued*: made (empty)
when a job is created queued or comes back to the queue, deleted when it leaves. The table
has no change trigger of its own: a pass's standings are not a change of what the queue is
planned from (migration 0014).
"""

import django.contrib.postgres.fields
import django.db.models.deletion
import django.db.models.functions.comparison
from django.db import migrations, models

COPY = """
INSERT INTO jobs_standing (job_id, position, latest_start, reason, detail, blockers, reservation)
SELECT id, queue_position, latest_start, wait_reason, wait_detail, blockers, reservation
FROM jobs_job WHERE status = 'queued';
"""

TRIGGERS = """
CREATE FUNCTION jobs_keep_standing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'queued' THEN
        INSERT INTO jobs_standing (job_id, reason, blockers) VALUES (NEW.id, '', '{}')
        ON CONFLICT (job_id) DO NOTHING;
    ELSE
        DELETE FROM jobs_standing WHERE job_id = NEW.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_job_standing_insert AFTER INSERT ON jobs_job
FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION jobs_keep_standing();
CREATE TRIGGER jobs_job_standing_update AFTER UPDATE OF status ON jobs_job
FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status) EXECUTE FUNCTION jobs_keep_standing();
"""

NO_TRIGGERS = """
DROP TRIGGER jobs_job_standing_update ON jobs_job;
DROP TRIGGER jobs_job_standing_insert ON jobs_job;
DROP FUNCTION jobs_keep_standing();
"""

# Back: the standings onto their jobs again (the columns are back by then).
COPY_BACK = """
UPDATE jobs_job SET queue_position = s.position, latest_start = s.latest_start,
    wait_reason = s.reason, wait_detail = s.detail, blockers = s.blockers,
    reservation = s.reservation
FROM jobs_standing AS s WHERE s.job_id = jobs_job.id;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0021_notifications"),
    ]

    operations = [
        migrations.CreateModel(
            name="Standing",
            fields=[
                ("job", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name="standing", serialize=False, to="jobs.job")),
                ("position", models.PositiveIntegerField(blank=True, null=True)),
                ("latest_start", models.DateTimeField(blank=True, null=True)),
                ("reason", models.CharField(blank=True, max_length=500)),
                ("detail", models.JSONField(blank=True, null=True)),
                ("blockers", django.contrib.postgres.fields.ArrayField(base_field=models.BigIntegerField(), blank=True, default=list)),
                ("reservation", models.JSONField(blank=True, null=True)),
            ],
            options={
                "db_table": "jobs_standing",
            },
        ),  # fmt: skip
        migrations.RunSQL(COPY, COPY_BACK),
        migrations.RunSQL(TRIGGERS, NO_TRIGGERS),
        migrations.RemoveIndex(
            model_name="job",
            name="job_queue_place",
        ),
        migrations.AddIndex(
            model_name="standing",
            index=models.Index(django.db.models.functions.comparison.Coalesce("position", models.Value(2147483647)), models.F("job"), name="standing_place"),
        ),  # fmt: skip
        migrations.RemoveField(model_name="job", name="blockers"),
        migrations.RemoveField(model_name="job", name="latest_start"),
        migrations.RemoveField(model_name="job", name="queue_position"),
        migrations.RemoveField(model_name="job", name="reservation"),
        migrations.RemoveField(model_name="job", name="wait_detail"),
        migrations.RemoveField(model_name="job", name="wait_reason"),
    ]

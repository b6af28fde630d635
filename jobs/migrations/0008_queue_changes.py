"""A log of the transactions that changed what admission plans from (jobs, their spec
choices, allocations, nodes, specs, pools): the form's prediction checks it to know whether
its plan still holds (jobs.prediction). Written by statement-level triggers, so no code path
that changes these tables (ORM, bulk update, raw SQL) can forget it."""

from django.db import migrations

TABLES = (
    "jobs_job",
    "jobs_jobspecchoice",
    "resources_allocation",
    "resources_node",
    "resources_nodespec",
    "resources_resourcepool",
    "resources_resourcepool_projects",
)

CREATE = """
CREATE TABLE jobs_queue_change (
    id bigserial PRIMARY KEY,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_queue_change_at ON jobs_queue_change (at);
CREATE FUNCTION jobs_note_queue_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO jobs_queue_change DEFAULT VALUES;
    RETURN NULL;
END $$;
""" + "".join(
    f"CREATE TRIGGER {table}_queue_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
    f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION jobs_note_queue_change();\n"
    for table in TABLES
)

DROP = "".join(f"DROP TRIGGER {table}_queue_change ON {table};\n" for table in TABLES) + (
    "DROP FUNCTION jobs_note_queue_change();\nDROP TABLE jobs_queue_change;\n"
)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0007_faults"),
        ("resources", "0004_faults"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]

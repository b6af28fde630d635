"""The queue's change log is written only by statements that changed a row.

Migration 0008's triggers fired once per statement, whether it changed a row or not: an
admission pass that found nothing to change still logged a change (its UPDATE of the
waiting jobs' standing matched rows it then left as they were), and so did a periodic
UPDATE that matched nothing. Each such entry made every web process build the queue's plan
again for the job form (seconds with thousands of jobs queued). Now an INSERT, UPDATE or
DELETE logs a change only when its transition table holds a row; TRUNCATE always does.
"""

from importlib import import_module

from django.db import migrations

# The tables migration 0008 gave a trigger, from that migration itself (history: it never
# changes).
TABLES = import_module("jobs.migrations.0008_queue_changes").TABLES
EVENTS = (("insert", "INSERT", "NEW"), ("update", "UPDATE", "NEW"), ("delete", "DELETE", "OLD"))

ROWS_FUNCTION = """
CREATE FUNCTION jobs_note_queue_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM changed_rows) THEN
        INSERT INTO jobs_queue_change DEFAULT VALUES;
    END IF;
    RETURN NULL;
END $$;
"""

FORWARD = ROWS_FUNCTION + "".join(
    f"DROP TRIGGER {table}_queue_change ON {table};\n"
    + "".join(
        f"CREATE TRIGGER {table}_queue_{name} AFTER {event} ON {table} "
        f"REFERENCING {side} TABLE AS changed_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION jobs_note_queue_rows_changed();\n"
        for name, event, side in EVENTS
    )
    + f"CREATE TRIGGER {table}_queue_truncate AFTER TRUNCATE ON {table} "
    "FOR EACH STATEMENT EXECUTE FUNCTION jobs_note_queue_change();\n"
    for table in TABLES
)

BACKWARD = (
    "".join(
        "".join(f"DROP TRIGGER {table}_queue_{name} ON {table};\n" for name, _, _ in EVENTS)
        + f"DROP TRIGGER {table}_queue_truncate ON {table};\n"
        + f"CREATE TRIGGER {table}_queue_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION jobs_note_queue_change();\n"
        for table in TABLES
    )
    + "DROP FUNCTION jobs_note_queue_rows_changed();\n"
)


class Migration(migrations.Migration):
    dependencies = [("jobs", "0013_queue_place")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]

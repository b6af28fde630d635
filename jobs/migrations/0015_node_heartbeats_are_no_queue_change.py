"""A node's heartbeat is no change of what the queue is planned from.

The inventory sync writes every node's ``last_heartbeat`` every half minute (one UPDATE per
node), and each such UPDATE logged a change of the queue (migration 0014): the form's
prediction made its plan again, and the admission pass could never skip, however quiet the
cluster. Now an UPDATE of nodes logs a change only when a row changed in another column.
A node whose heartbeat stops is marked not ready by the sync, and that change is logged.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION jobs_note_node_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM changed_rows AS n JOIN previous_rows AS o ON o.id = n.id
        WHERE to_jsonb(n) - 'last_heartbeat' IS DISTINCT FROM to_jsonb(o) - 'last_heartbeat'
    ) THEN
        INSERT INTO jobs_queue_change DEFAULT VALUES;
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER resources_node_queue_update ON resources_node;
CREATE TRIGGER resources_node_queue_update AFTER UPDATE ON resources_node
REFERENCING OLD TABLE AS previous_rows NEW TABLE AS changed_rows FOR EACH STATEMENT
EXECUTE FUNCTION jobs_note_node_rows_changed();
"""

BACKWARD = """
DROP TRIGGER resources_node_queue_update ON resources_node;
CREATE TRIGGER resources_node_queue_update AFTER UPDATE ON resources_node
REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT
EXECUTE FUNCTION jobs_note_queue_rows_changed();
DROP FUNCTION jobs_note_node_rows_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("jobs", "0014_queue_changes_only_when_rows_change")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]

"""A trigram index for the job list's name search (``name`` contains, any case), where the
server offers the ``pg_trgm`` extension and the console may create it.

Django's case-insensitive "contains" asks ``UPPER(name::text) LIKE UPPER('%…%')``; a b-tree
cannot serve a pattern that starts with ``%``, a trigram index can, so a rare name is found
among a million jobs without reading them all. A server without the extension (the embedded
one of ``make run``) keeps searching by reading the table: the same answers, only slower.
"""

from django.db import DatabaseError, migrations, transaction

INDEX = "job_name_trigram"


def create(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
        if cursor.fetchone() is None:
            return
        try:
            # A savepoint: without the right to create it, the migration goes on without it.
            with transaction.atomic(using=connection.alias), connection.cursor() as inner:
                inner.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except DatabaseError as exc:
            print(f"\n  job name search without a trigram index: {exc}".rstrip())
            return
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON jobs_job "
            "USING gin (UPPER(name::text) gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("jobs", "0015_node_heartbeats_are_no_queue_change")]

    operations = [migrations.RunPython(create, drop)]

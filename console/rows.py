"""Many rows inserted or updated in one statement with one parameter.

Django's ``bulk_create`` sends a parameter per value: at thousands of rows (an admission pass
allocating a few thousand replicas) building, splitting and adapting that query costs more
than PostgreSQL's insert. Here the rows travel as one JSON array and the server turns it
into rows of the table's own type (``json_populate_recordset``), arrays and JSON columns
included.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from uuid import UUID

from django.db import connection, models
from django.utils import timezone
from django.utils.functional import Promise


def insert(model: type[models.Model], rows: Iterable[Mapping[str, object]]) -> int:
    """Insert ``rows``, each the values of its fields by attribute name (``node_id`` for a
    foreign key); fields left out get their default, ``auto_now_add`` ones this moment.
    Returns how many rows went in (their ids are not read back)."""
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, models.AutoField)]
    now = timezone.now()
    defaults = {}
    for f in fields:
        if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False):
            defaults[f.attname] = now
        else:  # as a model instance would have it ("" for a text field without default)
            defaults[f.attname] = f.get_default()
    records = [_by_column(model, defaults | dict(row)) for row in rows]
    if not records:
        return 0
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    return _run(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {_ROWS.format(table)}",
                records)  # fmt: skip


def update(model: type[models.Model], values: Mapping[object, Mapping[str, object]]) -> int:
    """Set, for each primary key of ``values``, its fields to the values given (by attribute
    name, as :func:`insert`; every row the same fields), in one UPDATE. Returns how many
    rows it changed."""
    if not values:
        return 0
    meta = model._meta
    names = list(next(iter(values.values())))
    if any(list(row) != names for row in values.values()):
        raise ValueError("every row must set the same fields")
    pk = meta.pk.column
    records = [{pk: key, **_by_column(model, row)} for key, row in values.items()]
    quote = connection.ops.quote_name
    table, key = quote(meta.db_table), quote(pk)
    sets = ", ".join(f"{quote(n)} = r.{quote(n)}" for n in records[0] if n != pk)
    return _run(f"UPDATE {table} SET {sets} FROM {_ROWS.format(table)} AS r"
                f" WHERE {table}.{key} = r.{key}", records)  # fmt: skip


def _by_column(model: type[models.Model], row: Mapping[str, object]) -> dict[str, object]:
    """A row's values by column name, from its fields' attribute names."""
    columns = _columns(model)
    unknown = set(row) - set(columns)
    if unknown:
        raise ValueError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    return {columns[name]: value for name, value in row.items()}


@functools.cache
def _columns(model: type[models.Model]) -> dict[str, str]:
    return {f.attname: f.column for f in model._meta.concrete_fields}


# The records, given as one JSON array, as rows of the table's own type.
_ROWS = "json_populate_recordset(NULL::{}, %s::json)"


def _run(sql: str, records: list) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, [json.dumps(records, default=_plain)])
        return cursor.rowcount


def _plain(value):
    """What JSON cannot hold, as text PostgreSQL reads back exactly (datetimes to the
    microsecond: Django's own encoder would cut them to milliseconds)."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID | Promise):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not a column value")

"""What Celery beat sends, and how often (settings.CELERY_BEAT_SCHEDULE). The periods the
admin may change come from the environment (README: the ..._SECONDS variables)."""

from __future__ import annotations

from celery.schedules import crontab

from console import config


def every(task: str, variable: str, default: int, low: int = 1) -> dict:
    """``task`` every so many seconds: ``variable``'s, else ``default``."""
    return {"task": task, "schedule": float(config.env_int(variable, default, low=low))}


SCHEDULE = {
    "heartbeat": {"task": "console.tasks.heartbeat", "schedule": 15.0},
    "admission-pass": every("jobs.tasks.admit", "ADMISSION_SECONDS", 5),
    "sync-runs": every("jobs.tasks.sync_runs", "SYNC_SECONDS", 2),
    # Inspection (at the admin's period), the performance and hang watch, elastic growth.
    "watch-faults": every("jobs.tasks.watch_faults", "FAULT_WATCH_SECONDS", 1),
    "sync-tools": every("jobs.tasks.sync_tools", "TOOL_SYNC_SECONDS", 10),
    # Job events told to their owners (SPEC I4): email, webhooks, chat.
    "scan-notices": every("jobs.tasks.scan_notices", "NOTICE_SECONDS", 5),
    # The hours a failed job is kept for its debug terminal (SPEC J20), once over.
    "end-debugging": {"task": "jobs.tasks.end_debugging", "schedule": 60.0},
    "sync-inventory": every("resources.tasks.sync_inventory", "INVENTORY_SYNC_SECONDS", 30, 5),
    # The quotas as each cluster's Volcano queues (also sent after every quota change).
    "mirror-queues": every("resources.tasks.mirror_queues", "QUEUE_MIRROR_SECONDS", 60, 5),
    # Last week's usage to each project lead (SPEC G4), Monday morning; sent once a week
    # however often it runs (resources.digest).
    "usage-digests": {
        "task": "resources.tasks.mail_usage_digests",
        "schedule": crontab(minute=0, hour=6, day_of_week="mon"),
    },
    # Prepared data (SPEC J19) unused for longer than the admin's days leaves the nodes.
    "clean-prepared-data": every(
        "resources.tasks.clean_prepared_data", "PREPARED_DATA_CLEAN_SECONDS", 3600, 60
    ),
}

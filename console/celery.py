"""The Celery application: the worker and beat processes of the console."""

import logging
import os

from celery import Celery
from celery.signals import after_setup_logger

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
def _quiet_routine_tasks(**_kwargs) -> None:
    """Beat sends a task every two seconds: "received", "succeeded" and "sending due task"
    lines for each would bury what matters in `make run`'s output (--loglevel DEBUG shows
    them)."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat"):
            logging.getLogger(name).setLevel(logging.WARNING)

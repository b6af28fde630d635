from jobs.models.access import JobGroupObjectPermission, JobUserObjectPermission
from jobs.models.devenv import DevEnvironment
from jobs.models.events import JobEvent
from jobs.models.execution import Attempt, UsageSample
from jobs.models.faults import FaultRecord
from jobs.models.job import (
    LIVE_STATUSES,
    STATUS_OF_PHASE,
    Job,
    JobAnnotation,
    JobDataset,
    JobModel,
    JobSpecChoice,
    JobType,
    JobVolume,
    Mode,
    PerformancePolicy,
    Phase,
    Priority,
    Status,
    SubTask,
)
from jobs.models.notify import (
    Channel,
    ChatTarget,
    Delivery,
    Notice,
    NoticeMark,
    NotificationPrefs,
    Webhook,
)
from jobs.models.predictions import JobPrediction
from jobs.models.standing import Standing
from jobs.models.tools import Tool

__all__ = [
    "LIVE_STATUSES",
    "STATUS_OF_PHASE",
    "Attempt",
    "Channel",
    "ChatTarget",
    "Delivery",
    "DevEnvironment",
    "FaultRecord",
    "Job",
    "JobAnnotation",
    "JobDataset",
    "JobEvent",
    "JobGroupObjectPermission",
    "JobModel",
    "JobPrediction",
    "JobSpecChoice",
    "JobType",
    "JobUserObjectPermission",
    "JobVolume",
    "Mode",
    "Notice",
    "NoticeMark",
    "NotificationPrefs",
    "PerformancePolicy",
    "Phase",
    "Priority",
    "Standing",
    "Status",
    "SubTask",
    "Tool",
    "UsageSample",
    "Webhook",
]

"""The queue model: ordering, gang fit, admission, reservations and prediction.

Pure: plain data in, decisions out (no ORM, settings, I/O or clock). See :mod:`.core` for
the algorithm and why a reservation's start is a real latest start.
"""

from jobs.scheduling.core import BUDGET, OVERDUE, Schedule, order
from jobs.scheduling.data import (
    NORMAL,
    URGENT,
    VERY_URGENT,
    Admission,
    Alternative,
    Placement,
    Prediction,
    QueuedJob,
    Reservation,
    RunningJob,
    SchedNode,
    Suggestion,
)
from jobs.scheduling.passes import admit, plan, replay, schedule
from jobs.scheduling.predict import forecast, never_fits, predict
from jobs.scheduling.reasons import (
    HeldForQueue,
    HeldForQuota,
    NeverFits,
    NoAllowedNode,
    NotYetPlanned,
    Reason,
    Shortfall,
    TooFewNodes,
    words,
)

__all__ = [
    "BUDGET",
    "NORMAL",
    "OVERDUE",
    "URGENT",
    "VERY_URGENT",
    "Admission",
    "Alternative",
    "HeldForQueue",
    "HeldForQuota",
    "NeverFits",
    "NoAllowedNode",
    "NotYetPlanned",
    "Placement",
    "Prediction",
    "QueuedJob",
    "Reason",
    "Reservation",
    "RunningJob",
    "SchedNode",
    "Schedule",
    "Shortfall",
    "Suggestion",
    "TooFewNodes",
    "admit",
    "forecast",
    "never_fits",
    "order",
    "plan",
    "predict",
    "replay",
    "schedule",
    "words",
]

"""The platform limits of SPEC A, each declared once.

The settings form, the cached reader and the audit trail are all generated from
``LIMITS``: adding a limit is one entry here and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.core.cache import cache
from django.db import transaction
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

CACHE_KEY = "platform-limits:v1"


@dataclass(frozen=True)
class Limit:
    name: str
    kind: str  # "int", "bool", "int_list", "choice" (one of) or "choices" (several)
    default: Any
    label: Promise | str
    help: Promise | str
    section: Promise | str
    low: int | None = None
    high: int | None = None
    unit: Promise | str = ""
    choices: tuple[tuple[str, Promise | str], ...] = field(default_factory=tuple)

    def form_field(self) -> forms.Field:
        common = {"label": self.label, "help_text": self.help}
        if self.kind == "int":
            return forms.IntegerField(min_value=self.low, max_value=self.high, **common)
        if self.kind == "bool":
            return forms.BooleanField(required=False, **common)
        if self.kind == "int_list":
            return IntListField(low=self.low, high=self.high, **common)
        if self.kind == "choice":
            return forms.ChoiceField(choices=self.choices, **common)
        if self.kind == "choices":
            return forms.MultipleChoiceField(
                choices=self.choices,
                widget=forms.CheckboxSelectMultiple(attrs={"class": "form-check-input"}),
                **common,
            )
        raise ValueError(f"unknown kind {self.kind!r} for limit {self.name}")


class IntListField(forms.CharField):
    """Whole numbers separated by commas, each within bounds; kept sorted and unique."""

    def __init__(self, *, low: int | None, high: int | None, **kwargs):
        self.low, self.high = low, high
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return ", ".join(str(item) for item in value)
        return value

    def to_python(self, value):
        text = super().to_python(value)
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise forms.ValidationError(_("Enter at least one number."), code="required")
        numbers = []
        for item in items:
            try:
                numbers.append(int(item))
            except ValueError:
                raise forms.ValidationError(
                    _("“%(item)s” is not a whole number."), params={"item": item}, code="invalid"
                ) from None
        for number in numbers:
            if (self.low is not None and number < self.low) or (
                self.high is not None and number > self.high
            ):
                raise forms.ValidationError(
                    _("Each number must be from %(low)s to %(high)s; %(number)s is not."),
                    params={"low": self.low, "high": self.high, "number": number},
                    code="out_of_range",
                )
        return sorted(set(numbers))


RECOVERY = _("Fault recovery")
CHECKS = _("Prechecks and inspection")
QUEUE = _("Queue")
RESOURCES = _("Parameter servers")
RETENTION = _("Retention")
LIFECYCLE = _("Lifecycle scripts")
SHARING = _("Sharing")
IDLE = _("Idle capacity")
NOTIFICATIONS = _("Notifications")

IDLE_POLICIES = (
    ("warn", _("Warn the owner (event and email)")),
    ("stop", _("Warn, then stop it (checkpoint signal)")),
)

PERFORMANCE_POLICIES = (
    ("alert", _("Alert only (email)")),
    ("reschedule", _("Reschedule and alert")),
)

LIMITS: tuple[Limit, ...] = (
    Limit(
        "max_resumes", "int", 3, _("Max checkpoint resumes"),
        _("The highest “max resume count” a job may ask for."),
        RECOVERY, low=0, high=100,
    ),
    Limit(
        "max_graceful_shutdown_seconds", "int", 600, _("Max graceful shutdown"),
        _("The longest graceful shutdown time a job may ask for, in seconds."),
        RECOVERY, low=0, high=7200, unit=_("seconds"),
    ),
    Limit(
        "max_fault_restarts", "int", 3, _("Max fault restarts"),
        _("The highest “max restart count” a job may ask for."),
        RECOVERY, low=0, high=100,
    ),
    Limit(
        "performance_policies", "choices", ["alert", "reschedule"],
        _("Performance detection policies"),
        _("Policies users may pick when a job's hardware/e2e time crosses its threshold."),
        RECOVERY, choices=PERFORMANCE_POLICIES,
    ),
    Limit(
        "fault_exit_codes", "int_list", [101, 129], _("Fault exit codes"),
        _("Exit codes that mean a hardware or platform fault, not a bug in the job's code "
          "(seed 003): a job that ends with one restarts or resumes when it may."),
        RECOVERY, low=1, high=255,
    ),
    Limit(
        "performance_window", "int", 20, _("Performance window"),
        _("Consecutive iterations whose hardware/e2e time ratio must be above a job's "
          "threshold before its performance policy acts."),
        RECOVERY, low=1, high=10000, unit=_("iterations"),
    ),
    Limit(
        "hang_factor", "int", 10, _("Hang after"),
        _("A job that prints no progress line for this many times its median iteration "
          "time is hung."),
        RECOVERY, low=2, high=1000, unit=_("× the median iteration"),
    ),
    Limit(
        "hang_min_seconds", "int", 60, _("Shortest hang"),
        _("Never call a job hung before this long without a progress line."),
        RECOVERY, low=5, high=86400, unit=_("seconds"),
    ),
    Limit(
        "scale_up_after_seconds", "int", 60, _("Scale up after"),
        _("An elastic job running on fewer nodes than it asked for grows back once the "
          "missing nodes have been free this long."),
        RECOVERY, low=0, high=86400, unit=_("seconds"),
    ),
    Limit(
        "precheck_root_gb", "int", 32, _("Free disk: root"),
        _("A node's root disk needs more free space than this before a job starts there "
          "(a pool may set its own)."),
        CHECKS, low=0, high=100000, unit=_("GB"),
    ),
    Limit(
        "precheck_shm_gb", "int", 1, _("Free disk: /dev/shm"),
        _("Free shared memory (/dev/shm) a node needs before a job starts there."),
        CHECKS, low=0, high=100000, unit=_("GB"),
    ),
    Limit(
        "precheck_cache_gb", "int", 32, _("Free disk: cache"),
        _("Free space on a node's cache disk a job needs before it starts there."),
        CHECKS, low=0, high=100000, unit=_("GB"),
    ),
    Limit(
        "inspection_seconds", "int", 5, _("Inspection period"),
        _("How often the nodes running jobs are inspected (heartbeat, network, boards)."),
        CHECKS, low=1, high=3600, unit=_("seconds"),
    ),
    Limit(
        "urgent_jobs_per_project", "int", 5, _("Urgent jobs per project"),
        _("How many urgent jobs (running and queued) one project may hold."),
        QUEUE, low=0, high=10000,
    ),
    Limit(
        "resubmit_queue_timeout_minutes", "int", 30, _("Resubmitted job queue timeout"),
        _("A job resubmitted after a fault that waits longer ends as error."),
        QUEUE, low=1, high=10080, unit=_("minutes"),
    ),
    Limit(
        "fair_share_half_life_days", "int", 7, _("Fair-share half-life"),
        _("Within a priority, the jobs of the team furthest below its share of recent board "
          "use go first. Use this long ago counts half, twice as long ago a quarter. 0 turns "
          "fair share off (submit order only)."),
        QUEUE, low=0, high=365, unit=_("days"),
    ),
    Limit(
        "durations_hours", "int_list", [1, 2, 4, 8, 24, 72, 168], _("Durations on offer"),
        _("Durations users pick from, in hours, separated by commas."),
        QUEUE, low=1, high=8760, unit=_("hours"),
    ),
    Limit(
        "ps_cpu_cores", "int", 1, _("Parameter server CPU"),
        _("CPU cores of each TensorFlow parameter server."),
        RESOURCES, low=1, high=256, unit=_("cores"),
    ),
    Limit(
        "ps_memory_gib", "int", 1, _("Parameter server memory"),
        _("Memory of each TensorFlow parameter server."),
        RESOURCES, low=1, high=4096, unit=_("GiB"),
    ),
    Limit(
        "data_prep_retention_days", "int", 7, _("Prepared data kept"),
        _("Days prepared datasets stay on a node's fast storage."),
        RETENTION, low=0, high=365, unit=_("days"),
    ),
    Limit(
        "lifecycle_script_timeout_seconds", "int", 300, _("Lifecycle script time limit"),
        _("How long each lifecycle script of a job (before start, on failure, after stop) may "
          "run before it is killed."),
        LIFECYCLE, low=1, high=86400, unit=_("seconds"),
    ),
    Limit(
        "debug_retention_hours", "int", 4, _("Debug terminal kept"),
        _("Hours the containers of an abnormally ended job stay for debugging."),
        RETENTION, low=0, high=720, unit=_("hours"),
    ),
    Limit(
        "tool_idle_minutes", "int", 60, _("Idle tools stopped after"),
        _("A TensorBoard or JupyterLab nobody has used for this long is stopped."),
        RETENTION, low=1, high=10080, unit=_("minutes"),
    ),
    Limit(
        "idle_utilisation_percent", "int", 5, _("Idle below"),
        _("A running job whose boards (or, without boards reported, its CPUs) are used less "
          "than this on average is idle. 0 turns the idle watch off."),
        IDLE, low=0, high=100, unit="%",
    ),
    Limit(
        "idle_minutes", "int", 30, _("Idle for"),
        _("How long a job must stay below the threshold before the idle policy acts."),
        IDLE, low=1, high=10080, unit=_("minutes"),
    ),
    Limit(
        "idle_policy", "choice", "warn", _("Idle policy"),
        _("What happens to an idle job: its owner is told (on its page and by email), and it "
          "may be stopped so that others get its boards."),
        IDLE, choices=IDLE_POLICIES,
    ),
    Limit(
        "sharing_enabled", "bool", True, _("Sharing allowed"),
        _("When off, a job's others' access can only be “none”."),
        SHARING,
    ),
    Limit(
        "webhooks_inside", "bool", False, _("Webhooks into the console's network"),
        _("When off, a webhook may not point at this machine or a private network "
          "(loopback, 10.x, 172.16–31.x, 192.168.x, link-local), so that nobody can make the "
          "console's worker reach what only it can reach. Turn it on for receivers inside."),
        NOTIFICATIONS,
    ),
)  # fmt: skip

BY_NAME = {limit.name: limit for limit in LIMITS}


class Limits:
    """The values in force, read as attributes: ``current().max_resumes``."""

    def __init__(self, values: dict[str, Any]):
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)


def _load() -> dict[str, Any]:
    from console.models import PlatformSetting

    values = {limit.name: limit.default for limit in LIMITS}
    for name, value in PlatformSetting.objects.filter(name__in=BY_NAME).values_list(
        "name", "value"
    ):
        values[name] = value
    return values


def current() -> Limits:
    """The limits in force, from the cache; one query when the cache is cold."""
    values = cache.get(CACHE_KEY)
    if values is None:
        values = _load()
        cache.set(CACHE_KEY, values, timeout=300)
    return Limits(values)


def get(name: str) -> Any:
    return getattr(current(), name)


def settings_form_class() -> type[forms.Form]:
    fields = {limit.name: limit.form_field() for limit in LIMITS}
    return type("LimitsForm", (forms.Form,), fields)


def sections(form: forms.Form) -> list[tuple[str, list]]:
    """The form's bound fields grouped by section, in declaration order."""
    grouped: dict[str, list] = {}
    for limit in LIMITS:
        grouped.setdefault(str(limit.section), []).append((form[limit.name], limit))
    return list(grouped.items())


def save(changes: dict[str, Any], user) -> list[str]:
    """Store the values that differ from those in force, audit each, and refresh the cache.

    Returns the names of the limits that changed.
    """
    from console.models import PlatformSetting, SettingChange

    with transaction.atomic():
        before = _load()
        changed = []
        for name, value in changes.items():
            if name not in BY_NAME or before[name] == value:
                continue
            PlatformSetting.objects.update_or_create(name=name, defaults={"value": value})
            SettingChange.objects.create(
                name=name, old_value=before[name], new_value=value, changed_by=user
            )
            changed.append(name)
        transaction.on_commit(lambda: cache.delete(CACHE_KEY))
    return changed

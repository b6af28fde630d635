"""The job form (SPEC J1 to J23): every field, and every rule as a field-level error."""

from __future__ import annotations

from django import forms
from django.utils.functional import cached_property
from django.utils.translation import gettext_lazy as _

from console import limits
from console.modes import MAX_NODES, Rules, rules_of
from console.params import whole_number
from console.sharing import Access
from console.widgets import speed_up_selects, word_empty_choices
from jobs.forms import choices, draft, rows, rules, suggestions
from jobs.forms.draft import placement_fields
from jobs.models import (
    Channel,
    JobType,
    Mode,
    Notice,
    NotificationPrefs,
    PerformancePolicy,
    Priority,
)
from resources.catalog import storage
from resources.models import Node

CHECKBOXES = forms.CheckboxSelectMultiple(attrs={"class": "form-check-input"})
NAME_HELP = _("Lowercase letters, digits and “-”; unique among your queued and running jobs.")


class VersionChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, version):
        parent = getattr(version, "dataset", None) or getattr(version, "annotation_set", None)
        parent = parent or getattr(version, "model", None)
        return f"{parent.name} / {version.name}"


class VersionsField(forms.ModelMultipleChoiceField):
    label_from_instance = VersionChoiceField.label_from_instance


class SpecsField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, spec):
        return f"{spec.name} — {spec.summary()}"


def told_by_default(user) -> list[str]:
    """What ``user`` is told of a job on some channel by default (SPEC I4)."""
    if not getattr(user, "is_authenticated", False):
        return []
    prefs = NotificationPrefs.of(user)
    wanted = {n for channel in Channel.values for n in prefs.wanted(channel)}
    return [value for value in Notice.values if value in wanted]


class JobForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=40, help_text=NAME_HELP)
    others_access = forms.ChoiceField(
        label=_("Others' access"), choices=Access.choices, initial=Access.NONE,
        widget=forms.RadioSelect,
        help_text=_("What other members of the project may do with this job."),
    )  # fmt: skip
    job_type = forms.ChoiceField(
        label=_("Job type"), choices=JobType.choices, initial=JobType.REGULAR,
        widget=forms.RadioSelect,
    )  # fmt: skip
    priority = forms.TypedChoiceField(
        label=_("Priority"), choices=Priority.choices, coerce=int, initial=Priority.NORMAL
    )
    algorithm = forms.ModelChoiceField(label=_("Algorithm"), queryset=None, required=False)
    algorithm_read_only = forms.BooleanField(
        label=_("Mount the algorithm read-only"), required=False, initial=True
    )
    command = forms.CharField(
        label=_("Run command"), required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=_("Starts with an executable, e.g. python /workspace/algorithm/train.py"),
    )  # fmt: skip
    annotations = VersionsField(label=_("Annotation datasets"), queryset=None, required=False)
    models = VersionsField(
        label=_("Models"), queryset=None, required=False, help_text=_("Mounted read-only.")
    )
    volumes = forms.ModelMultipleChoiceField(
        label=_("Volumes"), queryset=None, required=False, help_text=_("Mounted writable.")
    )
    output_path = forms.CharField(
        label=_("Output path"), max_length=500, required=False,
        help_text=_("Where the model is saved; the job sees it as /workspace/outputs. Empty: "
                    "a new folder of this job's own. A folder you type must be yours (or a "
                    "volume shared with you read-write)."),
    )  # fmt: skip
    mode = forms.ChoiceField(label=_("Distributed mode"), choices=Mode.choices, initial=Mode.SINGLE)
    accelerator_filter = forms.ModelMultipleChoiceField(
        label=_("Accelerator model"), queryset=None, required=False, widget=CHECKBOXES,
        help_text=_("Show only the specs of these boards."),
    )  # fmt: skip
    specs = SpecsField(
        label=_("Node specs"), queryset=None, widget=CHECKBOXES,
        help_text=_("One or more: the first that can start wins; only one ever runs."),
    )  # fmt: skip
    node_count = forms.IntegerField(
        label=_("Node count"), min_value=1, max_value=MAX_NODES, initial=1
    )
    ps_count = forms.IntegerField(
        label=_("Parameter servers"), min_value=0, max_value=64, initial=0, required=False,
        help_text=_("TensorFlow only; 0 means AllReduce."),
    )  # fmt: skip
    node_names = forms.ModelMultipleChoiceField(
        label=_("Node names"), queryset=None, required=False, to_field_name="name",
        help_text=_("Run only on these nodes (not with a driver version or a pool)."),
    )  # fmt: skip
    driver_version = forms.ModelChoiceField(
        label=_("Driver version"), queryset=None, required=False
    )
    pool = forms.ModelChoiceField(label=_("Dedicated pool"), queryset=None, required=False)
    image = forms.ModelChoiceField(label=_("Image"), queryset=None)
    resume_enabled = forms.BooleanField(label=_("Checkpoint resume"), required=False)
    max_resumes = forms.IntegerField(label=_("Max resumes"), min_value=1, required=False)
    graceful_shutdown_seconds = forms.IntegerField(
        label=_("Graceful shutdown (seconds)"), min_value=0, initial=30,
        help_text=_("After a stop signal, the job has this long to save and exit."),
    )  # fmt: skip
    elastic = forms.BooleanField(label=_("Elastic training"), required=False)
    elastic_min_nodes = forms.IntegerField(label=_("Minimum nodes"), min_value=1, required=False)
    elastic_scale_up = forms.BooleanField(label=_("Allow scale-up"), required=False)
    perf_detection = forms.BooleanField(label=_("Performance detection"), required=False)
    perf_threshold = forms.DecimalField(
        label=_("Threshold (hardware / e2e time)"), min_value=0, max_value=1,
        decimal_places=3, required=False,
    )  # fmt: skip
    perf_policy = forms.ChoiceField(
        label=_("Policy"), choices=PerformancePolicy.choices, required=False
    )
    hang_policy = forms.ChoiceField(
        label=_("Hang detection"), required=False,
        choices=[("", _("Off")), (PerformancePolicy.ALERT, _("Alert (email)")),
                 (PerformancePolicy.RESCHEDULE, _("Checkpoint resume or restart, and alert"))],
    )  # fmt: skip
    fault_restart_enabled = forms.BooleanField(label=_("Fault restart"), required=False)
    max_restarts = forms.IntegerField(label=_("Max restarts"), min_value=1, required=False)
    data_prep = forms.BooleanField(
        label=_("Data preparation"), required=False,
        help_text=_("Copy the datasets to fast local storage first (they must be read-only)."),
    )  # fmt: skip
    debug_terminal = forms.BooleanField(label=_("Debug terminal"), required=False)
    duration_hours = forms.TypedChoiceField(label=_("Duration"), coerce=int)
    lifecycle_before_start = forms.CharField(
        label=_("Before start"), required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Shell commands run with bash -c on every node before the job's command, "
                    "in /workspace as the job. If they fail, the command does not run."),
    )  # fmt: skip
    lifecycle_after_stop = forms.CharField(
        label=_("After stop"), required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Run with bash -c on every node once the command has ended, whatever "
                    "the reason (success, failure, stop, expiry)."),
    )  # fmt: skip
    lifecycle_on_failure = forms.CharField(
        label=_("On failure"), required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Run with bash -c on every node when the command failed, before the "
                    "after-stop script."),
    )  # fmt: skip

    notify_on = forms.MultipleChoiceField(
        label=_("Tell me when"), required=False, choices=Notice.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("By your notification settings' channels (email, webhooks, chat)."),
    )  # fmt: skip

    def __init__(self, *args, user, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.user, self.project = user, project
        self.limits = limits.current()
        self.fields["notify_on"].initial = told_by_default(user)
        self.fields["algorithm"].queryset = choices.algorithms(user)
        self.fields["annotations"].queryset = choices.annotation_versions(user)
        self.fields["models"].queryset = choices.model_versions(user)
        self.fields["volumes"].queryset = choices.volumes(user)
        self.fields["accelerator_filter"].queryset = choices.accelerator_models()
        placement_fields(self, user, project, self.limits)
        self.fields["image"].queryset = choices.images()
        if not self.limits.sharing_enabled:
            self.fields["others_access"].choices = [(Access.NONE, Access.NONE.label)]
        self.fields["perf_policy"].choices = [
            (value, label)
            for value, label in PerformancePolicy.choices
            if value in self.limits.performance_policies
        ]
        # Says what counts as progress and the admin's factor in force, so that a user can
        # tell beforehand whether their training prints what the watch needs.
        self.fields["hang_policy"].help_text = _(
            "Progress is a log line “this iteration hardware time is X and e2e time is Y ms”. "
            "Once the job has printed some, none for %(factor)s × its median iteration time "
            "(at least %(seconds)s s) is a hang. Resuming or restarting needs checkpoint "
            "resume or fault restart."
        ) % {"factor": self.limits.hang_factor, "seconds": self.limits.hang_min_seconds}
        source = self.data if self.is_bound else self.initial
        self._add_rows(source)
        word_empty_choices(self)
        # Optional in the form only because the rules require them (a regular job's
        # algorithm, each sub-task's, each dataset row's version): the driver is optional.
        for name, field in self.fields.items():
            if name == "algorithm" or name.startswith(("subtask_", "dataset_")):
                field.empty_label = _("— choose —")
        self.fields["output_path"].widget.attrs.update(
            placeholder=_("%(folder)s/<job name>-<id> (new)")
            % {"folder": f"{storage.personal_folder(user)}/{storage.OUTPUTS}"},
            spellcheck="false",
        )
        speed_up_selects(self)
        self._mark_images_without_runtime()

    def _mark_images_without_runtime(self) -> None:
        """Where the job could run on this machine's nodes, images without a local runtime
        are shown disabled, with why (the rules refuse them if posted anyway). For a
        Kubernetes cluster's pool or nodes every image is offered."""
        # Read before validation: anything may have been posted (a database query must not
        # get a NUL, a number past a bigint, or a name longer than any node's).
        pool = whole_number(str(self.value("pool") or ""))
        names = [
            name
            for name in map(str, self.value("node_names") or [])
            if name and len(name) <= Node._meta.get_field("name").max_length and "\x00" not in name
        ]
        if not choices.may_run_locally(self.project, pool, names):
            return
        missing = choices.images_not_local(self.fields["image"].queryset)
        why = _("not on this machine's nodes: no local runtime")
        self.fields["image"].widget.unavailable = dict.fromkeys(missing, why)
        if missing:
            self.fields["image"].help_text = _(
                "Images without a local runtime run only on a Kubernetes cluster's pool or nodes."
            )

    # Rows ---------------------------------------------------------------------------------
    def _add_rows(self, source) -> None:
        self.subtask_count = rows.row_count(source, rows.SUBTASKS)
        self.dataset_count = rows.row_count(source, rows.DATASETS)
        algorithms = self.fields["algorithm"].queryset
        for i in range(self.subtask_count):
            self.fields[rows.SUBTASKS.name(i, "algorithm")] = forms.ModelChoiceField(
                label=_("Algorithm"), queryset=algorithms, required=False
            )
            self.fields[rows.SUBTASKS.name(i, "algorithm_read_only")] = forms.BooleanField(
                label=_("Read-only"), required=False
            )
            self.fields[rows.SUBTASKS.name(i, "command")] = forms.CharField(
                label=_("Run command"), required=False,
                widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
            )  # fmt: skip
        versions = choices.dataset_versions(self.user)
        for i in range(self.dataset_count):
            self.fields[rows.DATASETS.name(i, "version")] = VersionChoiceField(
                label=_("Dataset version"), queryset=versions, required=False
            )
            self.fields[rows.DATASETS.name(i, "read_only")] = forms.BooleanField(
                label=_("Read-only"), required=False
            )

    @property
    def required_now(self) -> set[str]:
        """Fields the rules (``rules.py``) require for what is typed now, which the fields
        cannot say themselves: the form marks them, and the rules word their errors."""
        names = set()
        if self.value("job_type") == JobType.BATCH:
            for i in range(self.subtask_count):
                names |= {rows.SUBTASKS.name(i, "algorithm"), rows.SUBTASKS.name(i, "command")}
        else:
            names |= {"algorithm", "command"}
        names |= {rows.DATASETS.name(i, "version") for i in range(self.dataset_count)}
        if self._ticked("resume_enabled"):
            names |= {"pool", "max_resumes"}
            if self._ticked("elastic"):
                names.add("elastic_min_nodes")
            if self._ticked("perf_detection"):
                names |= {"perf_threshold", "perf_policy"}
        if self._ticked("fault_restart_enabled"):
            names.add("max_restarts")
        return names

    def _ticked(self, name: str) -> bool:
        """As the template decides what to show (``form.current``)."""
        return bool(self.value(name))

    def subtask_rows(self):
        """(index, algorithm, read-only, command, the algorithm's suggestion) per sub-task."""
        indexes = list(range(self.subtask_count))
        return [
            (i, *(self[rows.SUBTASKS.name(i, f)] for f in rows.SUBTASKS.fields), suggestion)
            for i, suggestion in zip(indexes, suggestions.suggestions(self, indexes), strict=True)
        ]

    @cached_property
    def suggestion(self) -> suggestions.Suggestion | None:
        """What the job's algorithm suggests (image, mode, nodes, command), if anything."""
        return suggestions.suggestion(self)

    def dataset_rows(self):
        return [
            (i, *(self[rows.DATASETS.name(i, f)] for f in rows.DATASETS.fields))
            for i in range(self.dataset_count)
        ]

    def spec_options(self) -> list[tuple]:
        """(checkbox, spec, shown): specs outside the accelerator filter stay posted but hidden."""
        chosen_models = {str(v) for v in (self.value("accelerator_filter") or [])}
        options = []
        for option in self["specs"]:
            spec = option.data["value"].instance
            shown = not chosen_models or str(spec.accelerator_model_id) in chosen_models
            options.append((option, spec, shown))
        return options

    def model_options(self) -> list[tuple]:
        """(checkbox, accelerator model, boards queued jobs wait for) for the spec filter."""
        from resources.hooks import queued_demand

        demand = queued_demand()
        return [
            (option, option.data["value"].instance, demand.get(option.data["value"].value, 0))
            for option in self["accelerator_filter"]
        ]

    def value(self, name: str):
        """A field's current value (typed or initial), for the template's dependent parts."""
        return self[name].value()

    @property
    def mode_rules(self) -> Rules:
        """The rules of the mode chosen now (``form.mode_rules.parameter_servers``)."""
        return rules_of(self.value("mode"))

    @property
    def current(self) -> CurrentValues:
        """``form.current.mode`` in templates: the value typed (or initial) for a field."""
        return CurrentValues(self)

    # Rules --------------------------------------------------------------------------------
    def clean_name(self):
        return rules.clean_name(self.cleaned_data["name"], self.user)

    def clean_command(self):
        return self.cleaned_data["command"].strip()

    def clean_output_path(self):
        return rules.clean_output_path(self.cleaned_data["output_path"], self.user)

    def clean(self):
        data = super().clean()
        rules.check_all(self, data)
        return data


class CurrentValues:
    def __init__(self, form: JobForm):
        self.form = form

    def __getitem__(self, name: str):
        return self.form.value(name)


# The prediction's form (jobs.forms.draft): these same fields of this form.
DraftForm = type(
    "DraftForm", (draft.Draft,), {name: JobForm.base_fields[name] for name in draft.FIELDS}
)

"""The cross-field rules of SPEC J, each reported on the field a person would fix."""

from __future__ import annotations

import re

from django import forms
from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console.modes import may_have_parameter_servers, node_count_problem
from console.sharing import RANK, Access
from console.validation.command import check_command
from console.validation.messages import describe
from jobs.forms import choices, rows
from jobs.models import Job, JobType, PerformancePolicy, Priority
from resources.catalog import storage
from resources.catalog.mounts import UnsafePath
from resources.inventory import runtimes
from resources.models import VendorKind

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def clean_name(name: str, user) -> str:
    name = name.strip()
    if not DNS_LABEL.match(name):
        raise forms.ValidationError(
            _("Use lowercase letters, digits and “-”, starting with a letter and not ending "
              "with “-”: the name becomes a host name in distributed jobs.")
        )  # fmt: skip
    if Job.objects.live().filter(owner=user, name=name).exists():
        raise name_taken(name)
    return name


def name_taken(name: str) -> forms.ValidationError:
    return forms.ValidationError(
        _("You already have a queued or running job named “%(name)s”.") % {"name": name},
        code="taken",
    )


def clean_output_path(path: str, user) -> str:
    """Empty: the job gets a new folder of its own. Otherwise a folder the user may write to
    (their own storage, or a volume shared with them read-write), never someone else's."""
    path = path.strip()
    if not path:
        return ""
    example = f"{storage.personal_folder(user)}/{storage.OUTPUTS}/resnet"
    try:
        return storage.check_writable(user, path)
    except storage.NotYours as error:
        raise forms.ValidationError(storage.refusal(user, error)) from None
    except UnsafePath:
        raise forms.ValidationError(
            _("Give a folder inside the storage, such as %(example)s (no “..”, not absolute), "
              "or leave it empty for a new folder of this job's own.") % {"example": example}
        ) from None  # fmt: skip


def check_output_in_use(form, data) -> None:
    """Two live jobs writing one folder overwrite each other's checkpoints."""
    path = data.get("output_path")
    if not path:
        return
    # Equal, above it, or inside it: one query among the live jobs, not a loop over them.
    inside = Q(output_path__startswith=path.rstrip("/") + "/")
    nearby = Q(output_path__in=storage.enclosing_folders(path)) | inside
    for job in Job.objects.live().filter(nearby).only("name", "output_path")[:1]:
        if storage.overlap(job.output_path, path):
            form.add_error(
                "output_path",
                _("Job %(name)s, queued or running, writes to %(path)s: two jobs in one folder "
                  "overwrite each other's files. Pick another folder, or leave it empty for a "
                  "new one.") % {"name": job.name, "path": job.output_path},
            )  # fmt: skip
            return


def check_writes(form, data) -> None:
    """Asking to mount something writable needs the right to write it (SPEC P): say so on
    the row's read-only box rather than quietly mounting it read-only."""
    wanted = []
    if data.get("job_type") == JobType.BATCH:
        for i in range(form.subtask_count):
            field = rows.SUBTASKS.name(i, "algorithm_read_only")
            wanted.append((data.get(rows.SUBTASKS.name(i, "algorithm")), field))
    else:
        wanted.append((data.get("algorithm"), "algorithm_read_only"))
    for i in range(form.dataset_count):
        version = data.get(rows.DATASETS.name(i, "version"))
        wanted.append((getattr(version, "dataset", None), rows.DATASETS.name(i, "read_only")))
    for item, field in wanted:
        if item is None or data.get(field) or field in form.errors:
            continue
        if item.access_for(form.user) != Access.READ_WRITE:
            form.add_error(
                field,
                _("You may only read “%(name)s” (%(owner)s's): mount it read-only.")
                % {"name": item.name, "owner": item.owner.get_username()},
            )


def _command(form, field: str, value: str) -> None:
    problem = check_command(value)
    if problem:
        form.add_error(field, describe(problem))


def check_code(form, data) -> None:
    if data.get("job_type") == JobType.BATCH:
        if form.subtask_count == 0:
            form.add_error(None, _("A batch job needs at least one sub-task: add one."))
        for i in range(form.subtask_count):
            if not data.get(rows.SUBTASKS.name(i, "algorithm")):
                form.add_error(
                    rows.SUBTASKS.name(i, "algorithm"), _("Pick this sub-task's algorithm.")
                )
            _command(
                form,
                rows.SUBTASKS.name(i, "command"),
                data.get(rows.SUBTASKS.name(i, "command"), ""),
            )
        return
    if not data.get("algorithm"):
        form.add_error("algorithm", _("Pick the algorithm this job runs."))
    if "command" in data:
        _command(form, "command", data["command"])


def check_priority(form, data) -> None:
    priority = data.get("priority")
    if priority == Priority.VERY_URGENT and not form.user.is_staff:
        form.add_error("priority", _("Only platform admins may pick “very urgent”."))
    if priority == Priority.URGENT and form.project is not None:
        cap = form.limits.urgent_jobs_per_project
        held = Job.objects.live().filter(project=form.project, priority=Priority.URGENT).count()
        if held >= cap:
            form.add_error("priority", urgent_cap_message(form.project, held, cap))


def urgent_cap_message(project, held: int, cap: int) -> str:
    return ngettext(
        "Project %(project)s already holds %(held)s urgent job (queued or running); "
        "the cap is %(cap)s. Pick “normal”, or wait for it to end.",
        "Project %(project)s already holds %(held)s urgent jobs (queued and running); "
        "the cap is %(cap)s. Pick “normal”, or wait for one to end.",
        held,
    ) % {"project": project.name, "held": held, "cap": cap}


def check_shape(form, data) -> None:
    mode = data.get("mode")
    problem = node_count_problem(mode, data.get("node_count"))
    if problem:
        form.add_error("node_count", problem)
    if (data.get("ps_count") or 0) > 0 and not may_have_parameter_servers(mode):
        form.add_error("ps_count", _("Parameter servers are for TensorFlow jobs only."))


def check_placement(form, data) -> None:
    specs, image = list(data.get("specs") or []), data.get("image")
    kinds = {spec.kind for spec in specs}
    if image is not None:
        wrong = [spec.name for spec in specs if spec.kind not in image.board_kinds]
        if wrong:
            form.add_error(
                "image",
                _("This image runs on %(kinds)s boards, not on the %(kind)s of %(specs)s.")
                % {"kinds": ", ".join(image.board_kinds), "specs": ", ".join(wrong),
                   "kind": ", ".join(sorted({s.kind for s in specs if s.name in wrong}))},
            )  # fmt: skip
        if "training" not in image.scopes:
            form.add_error("image", _("This image is not meant for training jobs."))
        check_local_runtime(form, data, image)
    if data.get("node_names") and (data.get("driver_version") or data.get("pool")):
        form.add_error(
            "node_names",
            _("Pick node names, or a driver version and pool, not both: the nodes decide those."),
        )
    driver = data.get("driver_version")
    if driver is not None:
        if kinds - {VendorKind.GPU, VendorKind.MLU}:
            form.add_error(
                "driver_version", _("A driver version applies to GPU and MLU specs only.")
            )
        elif kinds and kinds != {driver.kind}:
            form.add_error(
                "driver_version",
                _("This driver is for %(kind)s boards.") % {"kind": driver.kind},
            )


def check_local_runtime(form, data, image) -> None:
    """An image without a local runtime cannot run on this machine's nodes (the local
    backend has no container to bring its Python): refused where the job could land there.
    A runtime that lacks only the part one mode needs (MPI) refuses that mode alone."""
    field, problem = "image", runtimes.local_problem(image)
    if problem is None:
        field, problem = "mode", runtimes.local_problem(image, data.get("mode"))
    if problem is None:
        return
    names = [node.name for node in data.get("node_names") or []]
    if choices.may_run_locally(form.project, data.get("pool"), names):
        form.add_error(field, problem)


def check_recovery(form, data) -> None:
    caps = form.limits
    resume, restart = data.get("resume_enabled"), data.get("fault_restart_enabled")
    if resume and restart:
        form.add_error(
            "fault_restart_enabled",
            _("Checkpoint resume and fault restart exclude each other: keep one."),
        )
    if resume:
        if not data.get("pool"):
            form.add_error("pool", _("Checkpoint resume needs a dedicated pool."))
        if data.get("job_type") == JobType.BATCH:
            form.add_error("resume_enabled", _("Only regular jobs can resume from checkpoints."))
        _bounded(form, data, "max_resumes", caps.max_resumes, _("max resumes"))
        if data.get("elastic"):
            low, nodes = data.get("elastic_min_nodes"), data.get("node_count") or 1
            if not low:
                form.add_error("elastic_min_nodes", _("Give the fewest nodes the job can run on."))
            elif low > nodes:
                form.add_error(
                    "elastic_min_nodes",
                    _("At most the node count (%(n)s).") % {"n": nodes},
                )
        if data.get("perf_detection"):
            if data.get("perf_threshold") in (None, ""):
                form.add_error("perf_threshold", _("Give the threshold, e.g. 0.8."))
            elif data["perf_threshold"] <= 0:
                form.add_error("perf_threshold", _("The threshold is above 0 and at most 1."))
            if not data.get("perf_policy"):
                form.add_error("perf_policy", _("Pick what happens when it is crossed."))
    elif data.get("elastic") or data.get("perf_detection"):
        form.add_error(
            "resume_enabled",
            _("Elastic training and performance detection are part of checkpoint resume."),
        )
    if restart:
        _bounded(form, data, "max_restarts", caps.max_fault_restarts, _("max restarts"))
    if data.get("hang_policy") == PerformancePolicy.RESCHEDULE and not (resume or restart):
        form.add_error(
            "hang_policy",
            _("Resuming or restarting a hung job needs checkpoint resume or fault restart: "
              "turn one on, or pick “alert”."),
        )  # fmt: skip
    graceful = data.get("graceful_shutdown_seconds")
    if graceful is not None and graceful > caps.max_graceful_shutdown_seconds:
        form.add_error(
            "graceful_shutdown_seconds",
            ngettext(
                "At most %(cap)s second (the platform's limit).",
                "At most %(cap)s seconds (the platform's limit).",
                caps.max_graceful_shutdown_seconds,
            )
            % {"cap": caps.max_graceful_shutdown_seconds},
        )


def _bounded(form, data, field: str, cap: int, what: str) -> None:
    value = data.get(field)
    if value in (None, ""):
        form.add_error(field, _("Give the %(what)s (1 to %(cap)s).") % {"what": what, "cap": cap})
    elif value > cap:
        form.add_error(field, _("At most %(cap)s (the platform's limit).") % {"cap": cap})


def check_data(form, data) -> None:
    seen = set()
    for i in range(form.dataset_count):
        version = data.get(rows.DATASETS.name(i, "version"))
        field = rows.DATASETS.name(i, "version")
        if version is None:
            if field not in form.errors:
                form.add_error(field, _("Pick a dataset version, or remove this row."))
            continue
        if version.pk in seen:
            form.add_error(field, _("This version is already mounted above."))
        seen.add(version.pk)
        if data.get("data_prep") and not data.get(rows.DATASETS.name(i, "read_only")):
            form.add_error(
                rows.DATASETS.name(i, "read_only"),
                _("Data preparation copies datasets, so they must be mounted read-only."),
            )


def mounted_items(form, data) -> list:
    items = []
    if data.get("job_type") == JobType.BATCH:
        items += [data.get(rows.SUBTASKS.name(i, "algorithm")) for i in range(form.subtask_count)]
    else:
        items.append(data.get("algorithm"))
    items += [data.get(rows.DATASETS.name(i, "version")) for i in range(form.dataset_count)]
    items += list(data.get("annotations") or []) + list(data.get("models") or [])
    items += list(data.get("volumes") or [])
    resolved = []
    for item in items:
        if item is None:
            continue
        parent = getattr(item, "dataset", None) or getattr(item, "annotation_set", None)
        resolved.append(parent or getattr(item, "model", None) or item)
    return resolved


def check_access(form, data) -> None:
    wanted = data.get("others_access")
    if not wanted:
        return
    if not form.limits.sharing_enabled and wanted != Access.NONE:
        form.add_error("others_access", _("Sharing is turned off: only “none” can be chosen."))
        return
    limiting = []
    for item in mounted_items(form, data):
        # Platform-wide items are readable by everyone: they limit nothing.
        if item.project_id is None:
            continue
        if RANK[item.access_for(form.user)] < RANK[Access(wanted)]:
            limiting.append(item.name)
    if limiting:
        form.add_error(
            "others_access",
            ngettext(
                "Others' access may not exceed yours to what the job mounts: you may only "
                "read %(items)s.",
                "Others' access may not exceed yours to what the job mounts: you may only "
                "read %(items)s.",
                len(limiting),
            )
            % {"items": ", ".join(sorted(set(limiting)))},
        )


def check_all(form, data) -> None:
    if form.project is None:
        form.add_error(None, _("You are in no project: ask a project lead to add you first."))
    check_code(form, data)
    check_priority(form, data)
    check_shape(form, data)
    check_placement(form, data)
    check_recovery(form, data)
    check_data(form, data)
    check_writes(form, data)
    check_output_in_use(form, data)
    check_access(form, data)

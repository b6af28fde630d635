"""/jobs/<id>/outputs/: what the job wrote to its output folder, read-only, as the job knows
it (/workspace/outputs/...), with each file to download. Anyone who may see the job may see
what it wrote, as with its log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from console.htmx import render_page
from jobs.permissions import get_job_for_user
from resources.catalog.mounts import OUTPUTS_TARGET, UnsafePath, clean_storage_path, storage_source

MAX_ENTRIES = 500  # a folder of a million checkpoints is not drawn whole


@dataclass(frozen=True)
class Entry:
    name: str
    sub: str  # the path under the output folder, for links
    folder: bool
    size: int
    modified: datetime


def _inside(base: Path, sub: str) -> Path:
    """``sub`` under ``base``; 404 for anything that would leave it (``..``, a link out)."""
    if not sub:
        return base
    try:
        path = (base / clean_storage_path(sub)).resolve()
    except (UnsafePath, RuntimeError, OSError):
        raise Http404 from None
    if path != base and base not in path.parents:
        raise Http404
    return path


def _entries(folder: Path, sub: str) -> tuple[list[Entry], int]:
    found = []
    for child in folder.iterdir():
        try:
            facts = child.stat()
        except OSError:  # gone since the listing, or a broken link
            continue
        found.append(
            Entry(
                name=child.name,
                sub=str(PurePosixPath(sub, child.name)) if sub else child.name,
                folder=child.is_dir(),
                size=facts.st_size,
                modified=datetime.fromtimestamp(facts.st_mtime, tz=UTC),
            )
        )
    found.sort(key=lambda e: (not e.folder, e.name))
    return found[:MAX_ENTRIES], len(found)


@require_GET
@login_required
def job_outputs(request: HttpRequest, pk: int) -> HttpResponse:
    job, _may = get_job_for_user(request.user, pk)
    sub = request.GET.get("path", "").strip("/")
    try:
        base = storage_source(job.output_path)
    except UnsafePath:
        raise Http404 from None
    path = _inside(base, sub)
    if path.is_file():
        file = path.open("rb")
        # Read a chunk at a time under ASGI too (console.streaming.StreamingMiddleware).
        return FileResponse(file, as_attachment=True, filename=path.name)
    entries, total = _entries(path, sub) if path.is_dir() else ([], 0)
    crumbs, walked = [], []
    for part in PurePosixPath(sub).parts if sub else ():
        walked.append(part)
        crumbs.append((part, "/".join(walked)))
    return render_page(
        request,
        "jobs/job_outputs.html",
        {
            "job": job,
            "sub": sub,
            "shown_path": str(PurePosixPath(OUTPUTS_TARGET, sub)) if sub else OUTPUTS_TARGET,
            "storage_path": str(PurePosixPath(job.output_path, sub)) if sub else job.output_path,
            "crumbs": crumbs,
            "parent": "/".join(walked[:-1]) if walked else None,
            "exists": path.is_dir(),
            "entries": entries,
            "more": total - len(entries),
        },
    )

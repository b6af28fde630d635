"""/catalog/: datasets, annotation datasets, algorithms, models and volumes (SPEC J5, J6, J22).

Every view fetches its item through :func:`get_item`: 404 for what the user may not see,
403 for what they see but may not change.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, ProtectedError, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.htmx import render_page
from console.models import Project
from console.params import next_path
from console.ratelimit import rate_limited
from console.sharing import Access
from resources.catalog import mounts
from resources.catalog.kinds import KINDS, Kind
from resources.filtersets import CatalogFilterSet
from resources.forms.catalog import item_form_class, version_form_class

PER_PAGE = 50


def get_item(request: HttpRequest, kind: Kind, pk: int, *, change: bool = False):
    """The item if the user may see it (else 404), and may change it when ``change`` (else 403)."""
    queryset = kind.model.objects.visible_to(request.user).select_related("owner", "project")
    item = get_object_or_404(queryset, pk=pk)
    if change and not item.may_change(request.user):
        raise PermissionDenied
    return item


@require_GET
@login_required
def overview(request: HttpRequest) -> HttpResponse:
    user = request.user
    cards = []
    for kind in KINDS.values():
        # One query per kind; DISTINCT because the favourites filter joins a row per fan.
        counts = kind.model.objects.visible_to(user).aggregate(
            **{
                tab: Count("pk", filter=kind.tab_filter(tab, user), distinct=True)
                for tab, _label in kind.filters
            }
        )
        tabs = [(tab, label, counts[tab]) for tab, label in kind.filters]
        cards.append((kind, tabs))
    return render_page(request, "resources/catalog/overview.html", {"cards": cards})


@require_GET
@login_required
def item_list(request: HttpRequest, kind: Kind) -> HttpResponse:
    tabs = kind.filters
    tab = request.GET.get("show", "")
    if tab not in dict(tabs):
        tab = tabs[0][0]
    queryset = (
        kind.model.objects.visible_to(request.user)
        .filter(kind.tab_filter(tab, request.user))
        .with_favourite(request.user)
        .select_related("owner", "project")
    )
    if kind.versioned:
        latest = kind.version_model.objects.filter(**{kind.version_parent: OuterRef("pk")})
        queryset = queryset.annotate(
            version_count=Count("versions", distinct=True),
            latest_version=Subquery(latest.order_by("-created_at", "-id").values("name")[:1]),
        )
    filterset = CatalogFilterSet(request.GET, queryset=queryset, request=request)
    page = Paginator(filterset.qs.order_by("name", "pk"), PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render_page(
        request,
        "resources/catalog/list.html",
        {"kind": kind, "tabs": tabs, "tab": tab, "filterset": filterset, "page": page},
    )


def _mounts_of(kind: Kind, item, versions: list, user, access: Access) -> tuple[list, str]:
    """What the user's job would mount, per version (or once), and why it cannot, if so."""
    try:
        if not kind.versioned:
            return [(None, mounts.mount_for(item, user, access=access))], ""
        planned = [(ver, mounts.mount_for(ver, user, access=access)) for ver in versions]
        return planned, ""
    except ValueError as error:
        # Rows made outside the forms (the Django admin, a script) may hold a bad name or
        # path: say so on the page rather than fail it.
        return [], str(error)


@require_GET
@login_required
def detail(request: HttpRequest, kind: Kind, pk: int) -> HttpResponse:
    item = get_item(request, kind, pk)
    user = request.user
    access = item.access_for(user)
    versions = list(item.versions.all()) if kind.versioned else []
    is_favourite = kind.favouritable and item.favourited_by.filter(pk=user.pk).exists()
    planned, mount_error = _mounts_of(kind, item, versions, user, access)
    try:
        folder = mounts.storage_source(item.path)
        folder_exists = folder.is_dir()
    except ValueError:
        folder, folder_exists = None, False
    except OSError:  # e.g. a storage root this process may not read
        folder_exists = False
    return render_page(
        request,
        "resources/catalog/detail.html",
        {
            "kind": kind,
            "item": item,
            "may_change": item.may_change(user),
            "own": item.owner_id == user.pk,
            "is_favourite": is_favourite,
            "versions": versions,
            "planned": planned,
            "mount_error": mount_error,
            "folder": folder,
            "folder_exists": folder_exists,
        },
    )


@require_POST
@login_required
@rate_limited("catalog", back=("catalog:detail", "catalog:list"))
def favourite(request: HttpRequest, kind: Kind, pk: int) -> HttpResponse:
    """Set (not toggle) the favourite state the button showed, so a double submit is harmless."""
    if not kind.favouritable:
        raise Http404
    item = get_item(request, kind, pk)
    wanted = request.POST.get("favourite") == "1"
    if wanted:
        item.favourited_by.add(request.user)
    else:
        item.favourited_by.remove(request.user)
    # Where a plain (no-JS) POST goes back to: the page it came from, if it is ours.
    next_url = next_path(request, item.get_absolute_url())
    if request.htmx:
        return render_page(
            request,
            "resources/catalog/includes/favourite.html",
            {
                "kind": kind,
                "item": item,
                "is_favourite": wanted,
                "next": next_url,
                "compact": request.POST.get("compact") == "1",
            },
            fragment="button",
        )
    if wanted:
        messages.success(request, _("“%(name)s” is now a favourite.") % {"name": item.name})
    else:
        messages.info(request, _("“%(name)s” is no longer a favourite.") % {"name": item.name})
    return redirect(next_url)


def _form_page(request, kind: Kind, form, *, item=None, title: str, status: int) -> HttpResponse:
    return render_page(
        request,
        "resources/catalog/form.html",
        {
            "kind": kind,
            "item": item,
            "form": form,
            "title": title,
            "no_projects": not request.user.is_staff
            and not Project.objects.for_user(request.user).exists(),
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("catalog", back=("catalog:detail", "catalog:list"))
def create(request: HttpRequest, kind: Kind) -> HttpResponse:
    form_class = item_form_class(kind)
    options = {"kind": kind, "user": request.user, "owner": request.user}
    title = _("New %(kind)s") % {"kind": kind.singular}
    if request.method == "POST":
        form = form_class(request.POST, **options)
        if form.is_valid():
            item = form.save()
            messages.success(request, _("Created “%(name)s”.") % {"name": item.name})
            return redirect(item)
        return _form_page(request, kind, form, title=title, status=422)
    project = request.project
    form = form_class(initial={"project": project.pk if project else None}, **options)
    return _form_page(request, kind, form, title=title, status=200)


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("catalog", back=("catalog:detail", "catalog:list"))
def edit(request: HttpRequest, kind: Kind, pk: int) -> HttpResponse:
    item = get_item(request, kind, pk, change=True)
    form_class = item_form_class(kind)
    options = {"kind": kind, "user": request.user, "owner": item.owner, "instance": item}
    title = _("Edit %(name)s") % {"name": item.name}
    if request.method == "POST":
        form = form_class(request.POST, **options)
        if form.is_valid():
            form.save()
            messages.success(request, _("Saved “%(name)s”.") % {"name": item.name})
            return redirect(item)
        # The failed form has changed the instance in memory; the page shows what is stored
        # (the form shows what was typed).
        item.refresh_from_db()
        return _form_page(request, kind, form, item=item, title=title, status=422)
    return _form_page(request, kind, form_class(**options), item=item, title=title, status=200)


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("catalog", back=("catalog:detail", "catalog:list"))
def add_version(request: HttpRequest, kind: Kind, pk: int) -> HttpResponse:
    if not kind.versioned:
        raise Http404
    item = get_item(request, kind, pk, change=True)
    form_class = version_form_class(kind)
    title = _("New version of %(name)s") % {"name": item.name}
    if request.method == "POST":
        form = form_class(request.POST, kind=kind, item=item)
        if form.is_valid():
            try:
                with transaction.atomic():
                    version = form.save()
            except IntegrityError:
                # Someone added the same version between the check and the save.
                form.add_error("name", _("This version was added meanwhile: pick another name."))
            else:
                messages.success(
                    request,
                    _("Added version “%(version)s” to “%(name)s”.")
                    % {"version": version.name, "name": item.name},
                )
                return redirect(item)
        return _form_page(request, kind, form, item=item, title=title, status=422)
    return _form_page(request, kind, form_class(kind=kind, item=item), item=item, title=title,
                      status=200)  # fmt: skip


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("catalog", back=("catalog:detail", "catalog:list"))
def delete(request: HttpRequest, kind: Kind, pk: int) -> HttpResponse:
    item = get_item(request, kind, pk, change=True)
    if request.method == "POST":
        try:
            item.delete()
        except ProtectedError:
            messages.error(
                request,
                _("“%(name)s” is still used by jobs, so it cannot be deleted.")
                % {"name": item.name},
            )
            return redirect(item)
        messages.success(request, _("Deleted “%(name)s”.") % {"name": item.name})
        return redirect("catalog:list", kind.slug)
    versions = item.versions.count() if kind.versioned else 0
    return render_page(
        request,
        "resources/catalog/confirm_delete.html",
        {"kind": kind, "item": item, "version_count": versions},
    )

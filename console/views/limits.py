"""/settings/: the platform limits of SPEC A, for platform admins."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from console import limits
from console.access import staff_required
from console.htmx import render_page
from console.models import SettingChange
from console.ratelimit import rate_limited

HISTORY_SHOWN = 20


@require_http_methods(["GET", "POST"])
@staff_required
@rate_limited("settings", back="settings")
def settings_page(request: HttpRequest) -> HttpResponse:
    form_class = limits.settings_form_class()
    if request.method == "POST":
        form = form_class(request.POST)
        if form.is_valid():
            changed = limits.save(form.cleaned_data, request.user)
            if changed:
                labels = ", ".join(str(limits.BY_NAME[name].label) for name in changed)
                messages.success(
                    request,
                    ngettext("Saved %(count)d change: %(labels)s.",
                             "Saved %(count)d changes: %(labels)s.", len(changed))
                    % {"count": len(changed), "labels": labels},
                )  # fmt: skip
            else:
                messages.info(request, _("Nothing changed."))
            return redirect("settings")
        messages.error(request, _("Some values were not saved: see the fields marked below."))
        status = 422
    else:
        form = form_class(initial=limits.current().as_dict())
        status = 200
    history = SettingChange.objects.select_related("changed_by")[:HISTORY_SHOWN]
    labels = {limit.name: limit.label for limit in limits.LIMITS}
    return render_page(
        request,
        "console/settings.html",
        {
            "form": form,
            "sections": limits.sections(form),
            "history": [(change, labels.get(change.name, change.name)) for change in history],
            # Where the local backend prepares data (SPEC J19): the admin's to know and size.
            "node_cache_dir": (
                str(settings.NODE_CACHE_DIR) if settings.EXECUTION_BACKEND == "local" else ""
            ),
        },
        status=status,
    )

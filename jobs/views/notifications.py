"""/account/notifications/: what a user is told of their jobs and where (SPEC I4): for each
channel the notices it gets, the webhooks (URL and signing secret) and chat services, and
the log of the deliveries made."""

from __future__ import annotations

import contextlib

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from console.htmx import render_page
from console.params import whole_number
from console.ratelimit import rate_limited
from jobs.faults.alerts import reachable
from jobs.models import Channel, ChatTarget, Delivery, Notice, NotificationPrefs, Webhook
from jobs.notify import addresses

LOG_ROWS = 50


def _notices(label) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(label=label, choices=Notice.choices, required=False,
                                     widget=forms.CheckboxSelectMultiple)  # fmt: skip


class PrefsForm(forms.Form):
    email = _notices(Channel.EMAIL.label)
    webhook = _notices(Channel.WEBHOOK.label)
    chat = _notices(Channel.CHAT.label)


class WebhookForm(forms.Form):
    url = forms.URLField(
        label=gettext_lazy("Webhook URL"), max_length=500, assume_scheme="https",
        help_text=gettext_lazy("Told of each notice by a signed POST (JSON)."),
    )  # fmt: skip

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_url(self):
        url = self.cleaned_data["url"]
        if not url.lower().startswith(("http://", "https://")):
            raise forms.ValidationError(_("A webhook is an http:// or https:// address."))
        if Webhook.objects.filter(user=self.user, url=url).exists():
            raise forms.ValidationError(_("This webhook is there already."))
        address = addresses.refused(url)
        if address:
            raise forms.ValidationError(
                _("This address is inside the console's network (%(address)s): an admin must "
                  "allow webhooks there (Settings, Notifications).") % {"address": address}
            )  # fmt: skip
        return url


class ChatForm(forms.Form):
    url = forms.CharField(
        label=gettext_lazy("Chat service"), max_length=500,
        help_text=gettext_lazy("An Apprise URL, e.g. slack://TokenA/TokenB/TokenC or "
                               "dingtalk://token/ (see Apprise's list of services)."),
    )  # fmt: skip

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_url(self):
        import apprise

        url = self.cleaned_data["url"].strip()
        if apprise.Apprise.instantiate(url) is None:
            raise forms.ValidationError(
                _("Apprise knows no service at this URL: check its scheme and parts.")
            )
        if ChatTarget.objects.filter(user=self.user, url=url).exists():
            raise forms.ValidationError(_("This chat service is there already."))
        return url


def grid(form: PrefsForm) -> list[tuple[str, str, list[tuple[str, bool]]]]:
    """The settings as a table: a row per notice, a ticked box or not per channel."""
    chosen = {channel: set(form[channel].value() or []) for channel in Channel.values}
    return [
        (value, label, [(channel, value in chosen[channel]) for channel in Channel.values])
        for value, label in Notice.choices
    ]


def _prefs_initial(user) -> dict:
    prefs = NotificationPrefs.of(user)
    return {channel: prefs.wanted(channel) for channel in Channel.values}


def _act(request, action: str, forms_: dict) -> HttpResponse | None:
    """Do what the POST asks; a redirect when done, None to show the page with errors."""
    user = request.user
    if action == "prefs" and forms_["prefs"].is_valid():
        NotificationPrefs.objects.update_or_create(user=user, defaults=forms_["prefs"].cleaned_data)
        messages.success(request, _("Saved what you are told."))
    elif action in ("webhook", "chat") and forms_[action].is_valid():
        model = Webhook if action == "webhook" else ChatTarget
        with contextlib.suppress(IntegrityError):  # the same address added twice at once
            model.objects.create(user=user, url=forms_[action].cleaned_data["url"])
        messages.success(request, _("Added."))
    elif action in ("remove_webhook", "remove_chat"):
        model = Webhook if action == "remove_webhook" else ChatTarget
        pk = whole_number(request.POST.get("id"))
        model.objects.filter(user=user, pk=pk).delete()
        messages.success(request, _("Removed."))
    else:
        return None
    return redirect("notifications")


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("account", back="notifications")
def notifications(request: HttpRequest) -> HttpResponse:
    user = request.user
    action = request.POST.get("action", "") if request.method == "POST" else ""
    data = request.POST if request.method == "POST" else None
    forms_ = {
        "prefs": PrefsForm(data if action == "prefs" else None, initial=_prefs_initial(user)),
        "webhook": WebhookForm(data if action == "webhook" else None, user=user),
        "chat": ChatForm(data if action == "chat" else None, user=user),
    }
    if action:
        done = _act(request, action, forms_)
        if done is not None:
            return done
        messages.error(request, _("Nothing was changed: see the fields marked below."))
    return render_page(
        request,
        "jobs/notifications.html",
        {
            **forms_,
            "grid": grid(forms_["prefs"]),
            "channels": Channel.choices,
            "mailable": reachable(user),
            "webhooks": Webhook.objects.filter(user=user),
            "chats": ChatTarget.objects.filter(user=user),
            "log": Delivery.objects.filter(user=user).select_related("job")[:LOG_ROWS],
        },
        status=422 if action else 200,
    )

"""/account/tokens/: a user's API tokens (SPEC I2): made with a name, scope and expiry, shown
once, listed with when they were made and last used, revoked. An admin sees and revokes
everyone's."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_http_methods, require_POST

from console import tokens
from console.htmx import render_page
from console.models import ApiToken
from console.params import whole_number
from console.ratelimit import rate_limited

SHOWN = "api_token_shown"  # the session key of a token just made, shown once


def _in_days(days: int):
    return lazy(lambda: ngettext("In %(n)s day", "In %(n)s days", days) % {"n": days}, str)()


EXPIRY = [
    ("7", _in_days(7)),
    ("30", _in_days(30)),
    ("90", _in_days(90)),
    ("365", gettext_lazy("In a year")),
    ("", gettext_lazy("Never")),
]


class TokenForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("Name"), max_length=60,
        help_text=gettext_lazy("What it is for, e.g. nightly-retrain or laptop."),
    )  # fmt: skip
    scope = forms.ChoiceField(
        label=gettext_lazy("Scope"), choices=ApiToken.Scope.choices, initial=ApiToken.Scope.READ,
        widget=forms.RadioSelect,
        help_text=gettext_lazy("Read only: see jobs, logs and the queue. Read and write: also "
                               "create, stop and delete jobs, as you may."),
    )  # fmt: skip
    expires = forms.ChoiceField(label=gettext_lazy("Expires"), choices=EXPIRY, initial="90",
                                required=False)  # fmt: skip

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError(_("Give the token a name."))
        if ApiToken.objects.filter(user=self.user, name=name, revoked_at__isnull=True).exists():
            raise forms.ValidationError(
                _("You already have a token named %(name)s: revoke it or pick another name.")
                % {"name": name}
            )
        return name

    def expires_at(self):
        days = self.cleaned_data.get("expires")
        return timezone.now() + timedelta(days=int(days)) if days else None


@require_http_methods(["GET", "POST"])
@login_required
@rate_limited("account", back="api_tokens")
def token_list(request: HttpRequest) -> HttpResponse:
    user = request.user
    form = TokenForm(request.POST or None, user=user)
    if request.method == "POST":
        if form.is_valid():
            row, text = tokens.issue(user, form.cleaned_data["name"], form.cleaned_data["scope"],
                                     form.expires_at())  # fmt: skip
            request.session[SHOWN] = {"id": row.pk, "token": text}
            return redirect("api_tokens")
        messages.error(request, _("The token was not made: see the fields marked below."))
    shown = request.session.pop(SHOWN, None)
    rows = tokens.expired_first(tokens.visible(user))
    status = 422 if request.method == "POST" else 200
    return render_page(
        request,
        "console/tokens.html",
        {
            "form": form,
            "mine": [row for row in rows if row.user_id == user.pk],
            "others": [row for row in rows if row.user_id != user.pk],
            "shown": shown,
            "now": timezone.now(),
        },
        status=status,
    )


@require_POST
@login_required
@rate_limited("account", back="api_tokens")
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    row = tokens.visible(request.user).filter(pk=whole_number(str(pk))).first()
    if row is None:
        raise Http404(_("No such token."))
    if tokens.revoke(row, request.user):
        messages.success(request, _("Revoked the token %(name)s.") % {"name": row.name})
    else:
        messages.info(request, _("The token %(name)s was already revoked.") % {"name": row.name})
    return redirect("api_tokens")

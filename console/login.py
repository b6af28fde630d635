"""Logging in: the form, the demo password's rule, and what django-axes counts failures by.

Failures are counted per username and client address (``LOGIN_FAILURE_LIMIT``, 5) and per
username from any address (``LOGIN_USERNAME_FAILURE_LIMIT``, 20): one client guessing is
stopped after a few tries, many addresses guessing one account a little later, and a
stranger cannot lock a colleague out with a handful of tries.
"""

from __future__ import annotations

import ipaddress
import logging
import re

from axes.handlers.database import AxesDatabaseHandler
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import ngettext

from console.demo import DEMO_PASSWORD

log = logging.getLogger(__name__)

# The user model's username column; axes' own is longer (255), so this keeps both safe.
USERNAME_MAX = 150
ADDRESS_WITH_PORT = re.compile(r"\[(?P<v6>[^\]]+)\](:\d+)?|(?P<v4>[\d.]+):\d+")


class UsernameLength:
    """Django's login form does not check the username's length before authenticating:
    an over-long one reached axes' table (a 500). Refuse it on the field instead."""

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        if len(username) > USERNAME_MAX:
            raise forms.ValidationError(
                ngettext(
                    "A username has at most %(max)d character (this one has %(length)d).",
                    "A username has at most %(max)d characters (this one has %(length)d).",
                    USERNAME_MAX,
                ),
                params={"max": USERNAME_MAX, "length": len(username)},
                code="max_length",
            )
        return username


class LoginForm(UsernameLength, AuthenticationForm):
    pass


class AdminLoginForm(UsernameLength, AdminAuthenticationForm):
    pass


class PasswordBackend(ModelBackend):
    """Django's password check, except that with demo mode off the demo password logs
    nobody in: an account that still has it is disabled on the spot (an unusable
    password; ``changepassword`` gives it a real one)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and password == DEMO_PASSWORD and not settings.DEMO_MODE:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            log.warning("Refused and disabled %s's demo password: DEMO_MODE is off", username)
            return None
        return user


def attempted_username(request: HttpRequest, credentials: dict | None = None) -> str | None:
    """The username axes records: never longer than its column, never with a NUL."""
    field = settings.AXES_USERNAME_FORM_FIELD
    if credentials:
        value = credentials.get(field)
    else:
        value = getattr(request, "data", request.POST).get(field)
    if value is None:
        return None
    return str(value).replace("\0", "")[:USERNAME_MAX]


def _address(text: str) -> str | None:
    """The address in ``text`` (some proxies add a port), or None if there is none."""
    text = text.strip()
    match = ADDRESS_WITH_PORT.fullmatch(text)
    for candidate in (text, match and (match["v6"] or match["v4"])):
        try:
            return str(ipaddress.ip_address(candidate or ""))
        except ValueError:
            continue
    return None


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: from ``CLIENT_IP_HEADER`` when the console is behind a proxy.

    In a list such as X-Forwarded-For each proxy appends the address it was called from, so
    the client is the entry just before the ones our ``TRUSTED_PROXY_COUNT`` proxies added;
    entries further left are whatever the client chose to send. Without the header (a
    request that did not come through the proxy) or with a value that is no address, the
    connection's own address counts.
    """
    header = settings.CLIENT_IP_HEADER
    if header:
        entries = [entry for entry in request.META.get(header, "").split(",") if entry.strip()]
        if entries:
            found = _address(entries[max(0, len(entries) - settings.TRUSTED_PROXY_COUNT)])
            if found:
                return found
    return _address(request.META.get("REMOTE_ADDR", ""))


class LoginAttempts(AxesDatabaseHandler):
    """Axes compares its largest count with one limit; the username-only count has a limit
    of its own (``AXES_LOCKOUT_PARAMETERS``: the pair first, then the username)."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        pair, username = (
            attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        )
        if username >= settings.LOGIN_USERNAME_FAILURE_LIMIT:
            return max(pair, settings.AXES_FAILURE_LIMIT)
        return pair

    def reset_user_attempts(self, request, credentials: dict | None = None) -> int:
        """A successful login forgives that client's own failures only: the user logging
        in must not unlock the addresses that were guessing their password."""
        pair = self.filter_user_attempts(request, credentials)[0]
        return pair.delete()[0]


def locked_out(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    return render(
        request,
        "registration/locked_out.html",
        {"minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)},
        status=429,
    )

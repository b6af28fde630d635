"""Who may reach a tool through the proxy, and the short-lived ticket that proves it.

The rules are SPEC P's: a job's TensorBoard is for whoever may see the job (read-only users
too); a JupyterLab is its owner's alone (it runs code as them: not even an admin steps into
someone else's). On top of the console's login the proxy asks for a *ticket*: a cookie the
console's own tool page gives the user, signed, naming the user and the tool, valid for
``TICKET_SECONDS`` and renewed by that page while it is open. A cookie copied elsewhere or a
link kept for later opens nothing once it expires, and nothing at all for another user.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing

from jobs.models import Job, Tool

TICKET_SECONDS = 600
_SALT = "console.tool-ticket"


def may_reach(user, tool: Tool) -> bool:
    if not (user.is_authenticated and user.is_active) or not tool.live:
        return False
    if tool.kind == Tool.Kind.TENSORBOARD:
        return (
            tool.job_id is not None and Job.objects.visible_to(user).filter(pk=tool.job_id).exists()
        )
    if tool.kind == Tool.Kind.JUPYTER:
        return tool.devenv_id is not None and tool.devenv.owner_id == user.pk
    return False


def page_of(tool: Tool) -> str:
    """The console page that shows the tool (and gives the ticket)."""
    return tool.get_absolute_url()


def cookie_name(tool_id: int) -> str:
    return f"console-tool-{tool_id}"


def _signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=_SALT)


def ticket(user, tool: Tool) -> str:
    return _signer().sign(f"{user.pk}.{tool.pk}")


def ticket_holder(value: str, tool_id: int) -> int | None:
    """The user id the ticket was given to, if it is for ``tool_id`` and still valid."""
    try:
        user_id, _, for_tool = _signer().unsign(value, max_age=TICKET_SECONDS).partition(".")
    except signing.BadSignature:
        return None
    if for_tool != str(tool_id) or not user_id.isdigit():
        return None
    return int(user_id)


def give_ticket(response, user, tool: Tool) -> None:
    response.set_cookie(
        cookie_name(tool.pk),
        ticket(user, tool),
        max_age=TICKET_SECONDS,
        path=tool.proxy_url(),
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )


def console_cookies() -> set[str]:
    """Cookies the tools never see (a tool runs its user's code: it must not get the
    console's session)."""
    return {
        settings.SESSION_COOKIE_NAME,
        settings.CSRF_COOKIE_NAME,
        settings.LANGUAGE_COOKIE_NAME,
    }

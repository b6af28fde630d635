"""Making, checking and revoking personal API tokens (SPEC I2).

A token reads ``tc_<prefix>_<secret>``: the prefix finds its row, the digest of the whole
token proves it. Secrets are 32 random bytes, so a plain SHA-256 is as strong as a slow
password hash would be, and checking one costs nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.utils import timezone

from console.models import ApiToken

LEAD = "tc_"
# A token's last use is written at most this often: a script polling every second would
# otherwise write the row on every request.
USE_EVERY = timedelta(minutes=1)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(user, name: str, scope: str, expires_at=None) -> tuple[ApiToken, str]:
    """A new token for ``user``, and its text (the only time anyone sees it)."""
    prefix = secrets.token_hex(6)
    token = f"{LEAD}{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiToken.objects.create(
        user=user, name=name, scope=scope, prefix=prefix, digest=_digest(token),
        expires_at=expires_at,
    )  # fmt: skip
    return row, token


def check(token: str) -> ApiToken | None:
    """The live token ``token`` is, its use noted; None for anything else."""
    if not isinstance(token, str) or not token.startswith(LEAD) or len(token) > 200:
        return None
    prefix, _, secret = token.removeprefix(LEAD).partition("_")
    if not prefix or not secret:
        return None
    row = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
    if row is None or not hmac.compare_digest(row.digest, _digest(token)):
        return None
    now = timezone.now()
    if not row.live(now) or not row.user.is_active:
        return None
    if row.last_used_at is None or now - row.last_used_at > USE_EVERY:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row


def revoke(row: ApiToken, by) -> bool:
    """Revoke ``row`` (by its owner or an admin); False when it was not live."""
    done = ApiToken.objects.filter(pk=row.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_by=by
    )
    return bool(done)


def visible(user):
    """The tokens ``user`` may see and revoke: their own; an admin's, everyone's."""
    rows = ApiToken.objects.select_related("user", "revoked_by")
    return rows if user.is_staff else rows.filter(user=user)


def expired_first(rows):
    """Live tokens first, then the ones that can no longer be used."""
    now = timezone.now()
    return sorted(rows, key=lambda row: (not row.live(now), -row.created_at.timestamp()))

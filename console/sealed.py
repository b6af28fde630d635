"""Secrets kept in the database (a cluster's token or kubeconfig), encrypted at rest.

Fernet (AES-128-CBC + HMAC-SHA256) under a key derived from ``CREDENTIALS_KEY``, or from
``SECRET_KEY`` when that is unset. A database dump alone then reveals no credential. When
the key changes, what was sealed under the old one cannot be opened: :func:`unseal` raises
:class:`Unreadable` and the console asks the admin to enter the credential again (rather
than failing somewhere deep in a request).
"""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

_CONTEXT = b"console sealed credentials v1"


class Unreadable(Exception):
    """Sealed under another key (CREDENTIALS_KEY or SECRET_KEY changed), or damaged."""


def _fernet() -> Fernet:
    secret = (settings.CREDENTIALS_KEY or settings.SECRET_KEY).encode()
    # A fixed context keeps this key apart from every other use of SECRET_KEY.
    key = hashlib.sha256(_CONTEXT + b"\0" + secret).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(text: str) -> str:
    """``text`` encrypted (ASCII); the empty string stays empty (nothing stored)."""
    return _fernet().encrypt(text.encode()).decode("ascii") if text else ""


def unseal(sealed: str) -> str:
    if not sealed:
        return ""
    try:
        return _fernet().decrypt(sealed.encode("ascii")).decode()
    except (InvalidToken, ValueError, UnicodeError) as error:
        raise Unreadable("sealed under another key, or damaged") from error

"""Where a webhook may point (SPEC I4): not into the console's own network unless the admin
allows it (the limit ``webhooks_inside``), so that a user cannot make the worker reach what
only the worker can reach (the database, the broker, a cluster's API on a private address).
Checked when a webhook is added and again before each delivery, since a name can come to
resolve elsewhere."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from console import limits


def inside(url: str) -> str | None:
    """The private or local address ``url``'s host has, if any; None when every address is
    public. A host that does not resolve is not inside (its delivery fails on its own)."""
    host = urlsplit(url).hostname or ""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return None
    for address in sorted(found):
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if not ip.is_global:
            return address
    return None


def refused(url: str) -> str | None:
    """The inside address that keeps ``url`` from being a webhook now; None if it may be."""
    if limits.current().webhooks_inside:
        return None
    return inside(url)

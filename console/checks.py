"""The console's own `manage.py check --deploy` warnings, beside Django's security ones."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def production_settings(app_configs, **kwargs) -> list[Warning]:
    found = []
    if settings.DEMO_MODE:
        found.append(
            Warning(
                "DEMO_MODE is on: the demo accounts (admin among them) log in with the "
                "password 'demo'.",
                hint="Set DEMO_MODE=0; the next start or seed_demo disables those logins.",
                id="console.W001",
            )
        )
    if not settings.CLIENT_IP_HEADER:
        found.append(
            Warning(
                "CLIENT_IP_HEADER is not set: behind a reverse proxy every login seems to come "
                "from the proxy, so the login lockout cannot tell clients apart.",
                hint="Set CLIENT_IP_HEADER=X-Forwarded-For (and TRUSTED_PROXY_COUNT if more "
                "than one proxy adds to it).",
                id="console.W002",
            )
        )
    return found

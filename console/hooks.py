"""Where apps built on console add to its pages (registered in their AppConfig.ready)."""

from __future__ import annotations

from collections.abc import Callable

# (request) -> (template name, context) of a card on the dashboard
dashboard_panels: list[Callable] = []
# (request, project) -> (template name, context) of a card on the project's page
project_panels: list[Callable] = []
# (ASGI scope) -> handler (scope, receive, send) or None: connections Django's views cannot
# carry (a proxy, a terminal's WebSocket), claimed by address
connection_routes: list[Callable] = []

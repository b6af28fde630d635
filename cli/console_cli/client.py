"""The console's API over HTTP: where it is, the token, and its answers as Python values."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import httpx

CONFIG = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "console-cli"


class Refused(Exception):
    """The console said no: ``status`` and its words (``errors``: per field, for a job)."""

    def __init__(self, status: int, detail: str, errors: dict | None = None):
        super().__init__(detail)
        self.status, self.detail, self.errors = status, detail, errors or {}

    def lines(self) -> list[str]:
        found = [self.detail]
        for field, messages in self.errors.items():
            found += [f"  {field}: {message}" for message in messages]
        return found


class Unreachable(Exception):
    """No answer from the console."""


@dataclass
class Settings:
    url: str
    token: str

    @classmethod
    def load(cls) -> Settings | None:
        saved = {}
        path = CONFIG / "config.json"
        if path.exists():
            saved = json.loads(path.read_text())
        url = os.environ.get("CONSOLE_URL") or saved.get("url")
        token = os.environ.get("CONSOLE_TOKEN") or saved.get("token")
        return cls(url.rstrip("/"), token) if url and token else None

    def save(self) -> Path:
        CONFIG.mkdir(parents=True, exist_ok=True)
        path = CONFIG / "config.json"
        # Made readable by the owner only before the token is written into it.
        path.touch(mode=0o600, exist_ok=True)
        path.chmod(0o600)
        path.write_text(json.dumps({"url": self.url, "token": self.token}))
        return path


class Client:
    def __init__(self, settings: Settings, language: str | None = None, timeout: float = 30):
        headers = {"Authorization": f"Bearer {settings.token}"}
        language = language or os.environ.get("LANGUAGE") or os.environ.get("LANG", "")
        if language:
            # "zh_CN.UTF-8" -> "zh-CN": the console answers in the language asked for.
            headers["Accept-Language"] = language.split(".")[0].split(":")[0].replace("_", "-")
        self.http = httpx.Client(
            base_url=f"{settings.url}/api/v1", headers=headers, timeout=timeout
        )

    def call(self, method: str, path: str, *, raw: bool = False, **kwargs):
        """The answer's JSON (its text with ``raw``, e.g. a job.yaml); a refusal raises
        :class:`Refused` with the console's words."""
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise Unreachable(str(exc)) from exc
        if response.status_code == 204:
            return None
        if raw and response.status_code < 400:
            return response.text
        try:
            body = response.json()
        except ValueError:
            body = {"detail": response.text[:500]}
        if response.status_code >= 400:
            detail = body.get("detail") if isinstance(body, dict) else None
            if isinstance(detail, list):  # the API's own check of a request's shape
                detail = "; ".join(str(item.get("msg", item)) for item in detail)
            raise Refused(response.status_code, str(detail or response.reason_phrase),
                          body.get("errors") if isinstance(body, dict) else None)  # fmt: skip
        return body

    def text(self, path: str) -> str:
        """An answer that is not JSON (a job.yaml)."""
        return self.call("GET", path, raw=True)

    def get(self, path: str, **params):
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: dict | None = None):
        return self.call("POST", path, json=body if body is not None else {})

    def delete(self, path: str):
        return self.call("DELETE", path)

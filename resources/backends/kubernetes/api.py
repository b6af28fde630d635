"""Talking to one cluster's API server through the official client, any path, plain JSON.

:class:`Connection` says how to reach it (plain data: an admin's cluster record, or a
kubeconfig file). :class:`Api` sends one request and turns every failure into a
:class:`~resources.backends.base.BackendError` whose words an admin can act on; its
subclasses say what the caller should do about it:

* :class:`ApiUnavailable`: no answer, a timeout, a 5xx or 429. Try again later;
  nothing is lost by waiting.
* :class:`ApiRefused`: 401 (credentials) or 403 (a verb our account lacks). An admin must act.
* :class:`ApiAnswer`: any other 4xx (404 NotFound, 409 AlreadyExists/Conflict, 410 Gone,
  422 Invalid...), with the API's ``reason`` and message.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import urllib3
import yaml

from resources.backends.base import BackendError, BackendUnavailable

if TYPE_CHECKING:
    from kubernetes import client

# The official client is imported where it is first used, not with this module: every
# process of the console (web, worker, beat, each manage.py command) imports this one, and
# the client alone took a third of a second to import, for a cluster most installations
# never add.

logger = logging.getLogger(__name__)

TIMEOUT_SECONDS = 10


class ApiUnavailable(BackendUnavailable):
    """The API did not answer usefully now (down, slow, 5xx, 429): try again later."""


class ApiRefused(BackendError):
    """401 or 403: an admin must fix the credentials or the account's permissions."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ApiAnswer(BackendError):
    """Any other 4xx, e.g. 404 NotFound, 409 AlreadyExists, 410 Expired, 422 Invalid."""

    def __init__(self, message: str, status: int, reason: str = "", body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.body = body or {}


@dataclass(frozen=True)
class Connection:
    """How to reach a cluster. ``kind``: "token" (``server``, ``ca``, ``token``),
    "kubeconfig" (``kubeconfig`` text and ``context``), "kubeconfig_file" (``path``, several
    joined by the path separator, as KUBECONFIG) or "in_cluster"."""

    kind: str
    server: str = ""
    ca: str = ""  # PEM
    token: str = ""
    kubeconfig: str = ""
    context: str = ""
    path: str = ""

    def __repr__(self) -> str:  # never the token or the kubeconfig, even in a traceback
        return f"Connection(kind={self.kind!r}, server={self.server!r}, context={self.context!r})"


def _configuration(connection: Connection) -> client.Configuration:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    # Our own Configuration, never the module-wide default: several clusters (and tests)
    # are talked to from one process.
    configuration = client.Configuration()
    kind = connection.kind
    try:
        if kind == "token":
            if not connection.server:
                raise BackendError("no API address is set")
            configuration.host = connection.server.rstrip("/")
            if connection.token:
                configuration.api_key = {"authorization": connection.token}
                configuration.api_key_prefix = {"authorization": "Bearer"}
            if connection.ca:
                configuration.ssl_ca_cert = _ca_file(connection.ca)
        elif kind == "kubeconfig":
            try:
                document = yaml.safe_load(connection.kubeconfig or "")
            except yaml.YAMLError as error:
                raise BackendError("cannot load the kubeconfig: not valid YAML") from error
            if not isinstance(document, dict):
                raise BackendError("cannot load the kubeconfig: not a kubeconfig")
            config.load_kube_config_from_dict(
                document,
                context=connection.context or None,
                client_configuration=configuration,
                persist_config=False,
            )
        elif kind == "kubeconfig_file":
            path = connection.path
            if not any(Path(p).expanduser().is_file() for p in path.split(os.pathsep) if p):
                raise BackendError(f"cannot load the kubeconfig {path}: no such file")
            try:
                config.load_kube_config(
                    config_file=path,
                    context=connection.context or None,
                    client_configuration=configuration,
                    persist_config=False,
                )
            except yaml.YAMLError as error:
                raise BackendError(f"cannot load the kubeconfig {path}: not valid YAML") from error
        elif kind == "in_cluster":
            config.load_incluster_config(client_configuration=configuration)
        else:
            raise BackendError(f"unknown connection kind {kind!r}")
    except (ConfigException, OSError, TypeError, KeyError, ValueError) as error:
        where = "in-cluster configuration" if kind == "in_cluster" else "kubeconfig"
        text = str(error).strip()
        why = text.splitlines()[0] if text else "unreadable"
        raise BackendError(f"cannot load the {where}: {why}") from error
    # One retry covers a dropped keep-alive connection; more would multiply the timeout.
    configuration.retries = 1
    return configuration


_CA_FILES: dict[str, str] = {}


def _ca_file(pem: str) -> str:
    """The client wants a file: one per distinct certificate, kept for the process and
    removed when it exits (each process that ever talked to a cluster left one behind)."""
    if pem not in _CA_FILES:
        handle = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)  # noqa: SIM115
        with handle:
            handle.write(pem)
        _CA_FILES[pem] = handle.name
    return _CA_FILES[pem]


@atexit.register
def _remove_ca_files() -> None:
    for path in _CA_FILES.values():
        Path(path).unlink(missing_ok=True)
    _CA_FILES.clear()


def _connection_message(error: BaseException, timeout: float) -> str:
    """Why a request got no answer, in a few plain words (urllib3 nests the real cause)."""
    chain: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and cause not in chain and len(chain) < 10:
        chain.append(cause)
        reason = getattr(cause, "reason", None)  # MaxRetryError keeps its cause there
        cause = reason if isinstance(reason, BaseException) else None
        cause = cause or chain[-1].__cause__ or chain[-1].__context__
    # Root causes first: urllib3's NewConnectionError is also a "connect timeout" class.
    for cause in chain:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "unknown host name"
        if isinstance(cause, ssl.SSLError):
            return f"TLS error ({getattr(cause, 'verify_message', None) or cause.reason})"
    if any(isinstance(c, urllib3.exceptions.TimeoutError | TimeoutError) for c in chain):
        return f"no answer within {timeout:g} s"
    if any(isinstance(c, ConnectionError | urllib3.exceptions.ProtocolError) for c in chain):
        return "the connection was closed without an answer"
    text = str(chain[-1]).strip()
    return text.splitlines()[-1] if text else type(chain[-1]).__name__


def _status_message(status: int, body: dict, what: str) -> str:
    message = str(body.get("message") or "").strip()
    if status == 401:
        return "the API refused our credentials (401): the token may have expired or been revoked"
    if status == 403:
        return f"our account may not {what} (403)" + (f": {message}" if message else "")
    reason = str(body.get("reason") or "")
    said = message or reason or "no reason given"
    return f"the API answered {status} to {what}: {said}"


class Api:
    """One cluster's API. Thread-safe enough for a Celery worker (the client pools
    connections); a 401 reloads the credentials on the next request."""

    def __init__(self, connection: Connection, timeout: float = TIMEOUT_SECONDS) -> None:
        self.connection = connection
        self.timeout = timeout
        self._client: client.ApiClient | None = None
        self.calls = 0  # requests sent, for the benchmarks

    @property
    def host(self) -> str:
        return self._api().configuration.host

    def _api(self) -> client.ApiClient:
        if self._client is None:
            from kubernetes import client

            self._client = client.ApiClient(_configuration(self.connection))
        return self._client

    def request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        query: dict | None = None,
        body: dict | None = None,
        text: bool = False,
        timeout: float | None = None,
        content_type: str = "application/json",
    ) -> dict | str:
        """Send one request; its JSON object (or text, for logs) when it succeeded."""
        from kubernetes.client.exceptions import ApiException

        api = self._api()
        params = [(k, v) for k, v in (query or {}).items() if v is not None and v != ""]
        headers = {"Accept": "text/plain" if text else "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        serialized = api.param_serialize(
            method,
            path,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        _method, url, headers, payload, post = serialized
        if params and "?" not in url:  # older generators leave the query to us
            url = f"{url}?{urlencode(params)}"
        wait = timeout or self.timeout
        self.calls += 1
        try:
            response = api.call_api(_method, url, headers, payload, post, _request_timeout=wait)
            data = response.read()
            status = response.status
        except ApiException as error:
            data, status = error.body or b"", error.status or 0
            if not status:
                raise ApiUnavailable(f"cannot reach {api.configuration.host}: {error}") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            why = _connection_message(error, wait)
            raise ApiUnavailable(f"cannot reach {api.configuration.host}: {why}") from error
        raw = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data or "")
        if 200 <= status < 300:
            if text:
                return raw
            return self._json(raw, api.configuration.host)
        return self._fail(status, raw, what)

    def _json(self, raw: str, host: str) -> dict:
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise BackendError(f"{host} did not answer with a JSON object")
        return answer

    def _fail(self, status: int, raw: str, what: str):
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        message = _status_message(status, body, what)
        if status == 401:
            self._client = None  # credentials may have been rotated: reload them next time
        if status in (401, 403):
            raise ApiRefused(message, status)
        if status >= 500 or status == 429:
            raise ApiUnavailable(message)
        raise ApiAnswer(message, status, str(body.get("reason") or ""), body)

    def get(self, path: str, what: str, **query) -> dict:
        return self.request("GET", path, what, query=query)  # type: ignore[return-value]

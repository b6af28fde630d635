"""One logged-in browser of a demo account, and the job form as a browser sends it."""

from __future__ import annotations

import contextlib
import random
import re
import threading
import time
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urlsplit

import requests

DEMO_PASSWORD = "demo"
# Seconds for every request of the load: on a machine busy with other work (the suite's
# other process) an answer may be slow without being lost; what is lost is counted.
TIMEOUT = 30
SETUP_TIMEOUT = 30  # seconds, for the logins and first pages before it (not measured)
# What the load's job form asks for: the demo algorithm's single-node launch, on the
# smallest CPU spec, with the image of resnet-train's launch where this machine can run it.
ALGORITHM = "resnet-train"
SPEC = "cpu-small"
IMAGES = ("pytorch-2", "tensorflow-2", "deepspeed")
# Seconds a connection may stay idle and still be used again: less than the web server's
# keep-alive (gunicorn's default, 2 s), after which the server closes it. A request sent on
# a connection at the moment the server closes it is lost before the server reads it; a
# user who reads a page for a while (the soak's) would meet that moment now and then.
IDLE_SECONDS = 1.0


@dataclass(frozen=True)
class Sample:
    """One request: what kind of page, its path, the status (or "error: <exception>"),
    how long it took (ms), when it ended (time.monotonic()), and its Retry-After header."""

    kind: str
    path: str
    status: int | str
    ms: float
    at: float
    retry_after: str | None = None


class User:
    """A logged-in session of one demo account, as a browser holds it: its cookies, the
    CSRF token htmx sends, the job form as the page fills it in."""

    def __init__(self, base: str, username: str, seed: int = 0):
        if urlsplit(base).hostname != "127.0.0.1":
            raise ValueError(f"the load goes to 127.0.0.1 only, not {base}")
        self.base = base
        self.username = username
        self.session = requests.Session()
        self.samples: list[Sample] = []
        self.job_ids: list[int] = []
        self.form: list[tuple[str, str]] = []
        self.rng = random.Random(seed)
        self.stopping: threading.Event | None = None
        self.resent = 0  # GETs sent again on a new connection (see _send)
        self.used = 0.0  # time.monotonic() of the last answer

    def log_in(self, password: str = DEMO_PASSWORD) -> User:
        self.session.get(f"{self.base}/login/", timeout=SETUP_TIMEOUT).raise_for_status()
        reply = self.session.post(
            f"{self.base}/login/",
            data={
                "username": self.username,
                "password": password,
                "csrfmiddlewaretoken": self.session.cookies["csrftoken"],
            },
            headers={"Referer": self.base},
            timeout=SETUP_TIMEOUT,
        )
        if reply.status_code != 200 or urlsplit(reply.url).path != "/":
            raise LoadError(f"{self.username} could not log in: {reply.status_code}")
        return self

    def beside(self, seed: int) -> User:
        """Another user of the same account, logged in by this one's login: a second tab.
        Each login checks a password (most of a second of the web worker's time), and a
        crowd of tabs that each logged in kept the server busy long enough that some
        logins timed out before the load began."""
        other = User(self.base, self.username, seed=seed)
        other.session.cookies.update(self.session.cookies)
        return other

    def _setup_get(self, path: str) -> requests.Response:
        """A GET before the load begins (not measured)."""
        response = self._send("GET", path, timeout=SETUP_TIMEOUT)
        response.raise_for_status()
        return response

    def _send(self, method: str, path: str, **kwargs) -> requests.Response:
        """One request as a browser sends it: a GET that meets a connection closed as it was
        reused is sent again, once, on a new connection. The server closes a connection idle
        past its keep-alive, and a request sent at that moment finds it gone; browsers resend
        such idempotent requests without telling anyone, and a load that counted them as lost
        failed by chance. A second failure is an answer not given. After a pause longer
        than :data:`IDLE_SECONDS` the request goes on a new connection, never on one the
        server may be closing (the cookies stay: they are the session's, not a connection's)."""
        if time.monotonic() - self.used > IDLE_SECONDS:
            self.session.close()  # its connections only; the next request opens one
        try:
            return self.session.request(method, self.base + path, **kwargs)
        except requests.ConnectionError:
            if method != "GET":
                raise
            self.resent += 1
            return self.session.request(method, self.base + path, **kwargs)
        finally:
            self.used = time.monotonic()

    def prepare(self) -> User:
        """What the first pages give: the jobs to open, and the job form's fields."""
        self.job_ids = job_links(self._setup_get("/jobs/").text)
        page = self._setup_get("/jobs/new/")
        self.form = job_form_data(page.text, f"load-{self.username}", "sleep 2")
        return self

    def request(self, kind: str, method: str, path: str, **kwargs) -> requests.Response | None:
        """One recorded request; None if it got no answer (refused, reset, timed out)."""
        if self.stopping is not None and self.stopping.is_set():
            raise Stop
        started = time.monotonic()
        try:
            response = self._send(method, path, timeout=TIMEOUT, allow_redirects=False, **kwargs)
        except requests.RequestException as exc:
            ended = time.monotonic()
            self.samples.append(
                Sample(kind, path, f"error: {type(exc).__name__}", (ended - started) * 1000, ended)
            )
            return None
        ended = time.monotonic()
        self.samples.append(
            Sample(
                kind, path, response.status_code, (ended - started) * 1000, ended,
                response.headers.get("Retry-After"),
            )
        )  # fmt: skip
        return response

    def get(self, kind: str, path: str, htmx: bool = False) -> requests.Response | None:
        return self.request(kind, "GET", path, headers=self.htmx_headers() if htmx else None)

    def htmx_headers(self) -> dict[str, str]:
        """The headers htmx adds: the page's CSRF token goes with every request (base.html)."""
        return {
            "HX-Request": "true",
            "X-CSRFToken": self.session.cookies.get("csrftoken", ""),
            "Referer": self.base + "/",
        }

    def submit_job(self, name: str, command: str = "sleep 2") -> int:
        """The job form filled in and sent as a browser sends it; the new job's id. Told to
        wait (over the submission limit, or the server busy), waits as the answer says and
        sends it again, as a person would."""
        for _ in range(5):
            page = self.get("new", "/jobs/new/")
            if _told_to_wait(page):
                time.sleep(int(page.headers["Retry-After"]))
                continue
            if page is None or page.status_code != 200:
                # No answer: the sample says why (a timeout, a reset connection...).
                said = page.status_code if page is not None else self.samples[-1].status
                raise RuntimeError(f"/jobs/new/ answered {said}")
            reply = self.request(
                "submit", "POST", "/jobs/new/",
                data=job_form_data(page.text, name, command),
                headers={"Referer": f"{self.base}/jobs/new/"},
            )  # fmt: skip
            if not _told_to_wait(reply):
                break
            time.sleep(int(reply.headers["Retry-After"]))
        else:
            raise RuntimeError(f"job {name} not created: still told to wait")
        if reply is None or reply.status_code != 302:
            detail = reply.text[-2000:] if reply is not None else "no answer"
            raise RuntimeError(f"job {name} not created ({reply and reply.status_code}): {detail}")
        return int(re.fullmatch(r"/jobs/(\d+)/", urlsplit(reply.headers["Location"]).path)[1])

    def close(self) -> None:
        self.session.close()


def _told_to_wait(response: requests.Response | None) -> bool:
    return (
        response is not None
        and response.status_code in {429, 503}
        and response.headers.get("Retry-After", "").isdigit()
    )


class LoadError(RuntimeError):
    """The load could not start: a user could not log in or open the first pages."""


class Stop(Exception):
    """The load's time is up: the user ends mid-step."""


def job_links(page: str) -> list[int]:
    """The jobs a page links to, in its order."""
    return list(dict.fromkeys(int(pk) for pk in re.findall(r'href="/jobs/(\d+)/"', page)))


def job_form_data(page: str, name: str, command: str) -> list[tuple[str, str]]:
    """The job form of ``page`` as a browser sends it after a person picked a simple
    single-node job: the demo algorithm, the smallest CPU spec, an image this machine runs."""
    form = read_form(page, "job-form")
    form.set("name", name)
    form.set("command", command)
    form.set("mode", "single")
    form.set("node_count", "1")
    with contextlib.suppress(KeyError):  # an account outside vision is not offered it
        form.pick("algorithm", ALGORITHM)
    form.pick("specs", SPEC)
    offered = {label for _value, label, disabled in form.choices["image"] if not disabled}
    form.pick("image", next(image for image in IMAGES if image in offered))
    return form.data


@dataclass
class Form:
    data: list[tuple[str, str]]
    # field -> (value, first word of its label, disabled) of each choice
    choices: dict[str, list[tuple[str, str, bool]]]

    def set(self, name: str, value: str) -> None:
        self.data = [(k, v) for k, v in self.data if k != name] + [(name, value)]

    def pick(self, name: str, label: str) -> None:
        """Choose the choice of that label, as a person does (its id differs per database)."""
        for value, found, _disabled in self.choices.get(name, ()):
            if found == label:
                self.set(name, value)
                return
        raise KeyError(f"{name}: no choice {label!r}")


def read_form(page: str, form_id: str) -> Form:
    reader = _FormReader(form_id)
    reader.feed(page)
    reader.close()
    choices: dict[str, list[tuple[str, str, bool]]] = {}
    for name, value, label_id, disabled in reader.options:
        words = reader.labels.get(label_id, "").split()
        choices.setdefault(name, []).append((value, words[0] if words else "", disabled))
    return Form(reader.fields, choices)


class _FormReader(HTMLParser):
    """The fields of one form with the values a browser would send, and its choices."""

    def __init__(self, form_id: str):
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        # (field, value, id of its label, disabled); an option's text is its own label
        self.options: list[tuple[str, str, str | None, bool]] = []
        self.labels: dict[str, str] = {}
        self._label: str | None = None
        self._select: dict | None = None
        self._option: dict | None = None
        self._textarea: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
        elif tag == "label" and attrs.get("for"):
            self._label = attrs["for"]
            self.labels[self._label] = ""
        if not self.inside:
            return
        if tag == "input":
            self._input(attrs)
        elif tag == "select" and attrs.get("name"):
            self._select = {"name": attrs["name"], "multiple": "multiple" in attrs, "all": []}
        elif tag == "option" and self._select is not None:
            self._option = {**attrs, "text": ""}
            self._select["all"].append(self._option)
        elif tag == "textarea" and attrs.get("name"):
            self._textarea = {"name": attrs["name"], "text": ""}

    def _input(self, attrs: dict) -> None:
        name, kind = attrs.get("name"), attrs.get("type", "text")
        if not name or kind in {"submit", "button", "file", "reset", "image"}:
            return
        if kind in {"checkbox", "radio"}:
            value = attrs.get("value", "on")
            self.options.append((name, value, attrs.get("id", ""), "disabled" in attrs))
            if "checked" in attrs:
                self.fields.append((name, value))
        else:
            self.fields.append((name, attrs.get("value", "")))

    def handle_data(self, data):
        if self._label is not None:
            self.labels[self._label] += data
        if self._option is not None:
            self._option["text"] += data
        if self._textarea is not None:
            self._textarea["text"] += data

    def handle_endtag(self, tag):
        if tag == "label":
            self._label = None
        elif tag == "form":
            self.inside = False
        elif tag == "option":
            self._option = None
        elif tag == "select" and self._select is not None:
            self._end_select(self._select)
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            # A browser drops the newline that follows the opening tag.
            text = self._textarea["text"].removeprefix("\n")
            self.fields.append((self._textarea["name"], text))
            self._textarea = None

    def _end_select(self, select: dict) -> None:
        name, options = select["name"], select["all"]
        for option in options:
            option["value"] = value = option.get("value", option["text"].strip())
            label_id = f"option {len(self.labels)}"
            self.labels[label_id] = option["text"]
            self.options.append((name, value, label_id, "disabled" in option))
        chosen = [o for o in options if "selected" in o]
        if not chosen and not select["multiple"]:
            # A single choice with none marked: the browser sends its first enabled one.
            chosen = [o for o in options if "disabled" not in o][:1]
        self.fields.extend((name, option["value"]) for option in chosen)

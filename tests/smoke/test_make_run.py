"""`make run`'s processes start on a bare machine, serve a logged-in user and stop on Ctrl-C."""

import http.cookiejar
import re
import signal
import subprocess
import threading
import urllib.parse
import urllib.request

import psutil
import pytest

from tests.helpers import settings_form_data, wait_until
from tests.smoke.conftest import ROOT

pytestmark = pytest.mark.slow


class Output:
    """Collects a process's output in a thread, so the pipe never fills."""

    def __init__(self, stream):
        self.lines: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in iter(stream.readline, ""):
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def browser():
    jar = http.cookiejar.CookieJar()
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)), jar


def log_in(opener, jar, base, username, password):
    with opener.open(f"{base}/login/") as page:
        assert page.status == 200
    token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
    form = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token}
    ).encode()
    request = urllib.request.Request(f"{base}/login/", data=form, headers={"Referer": base})
    with opener.open(request) as reply:
        return reply.status, reply.geturl(), reply.read().decode()


def start(argv, env):
    return subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def wait_for_banner(output: Output) -> str:
    return wait_until(lambda: "The console is running at" in output.text() and output.text(), 120)


def stop(proc) -> int:
    proc.send_signal(signal.SIGINT)
    return proc.wait(timeout=60)


def test_run_serves_stops_cleanly_and_keeps_the_data_for_the_next_run(
    supervisor_env, supervisor_argv
):
    """One `make run` serves a logged-in user, has its worker and beat alive, saves a
    setting and stops cleanly on Ctrl-C; the next one finds the setting (two starts, not
    three: each costs the suite a quarter of a minute)."""
    base = f"http://127.0.0.1:{supervisor_env['PORT']}"
    proc = start(supervisor_argv, supervisor_env)
    output = Output(proc.stdout)
    try:
        text = wait_for_banner(output)
        assert f"{base}/" in text
        assert "Demo logins: admin, lead, alice, bob, charlie" in text
        assert "embedded PostgreSQL" in text and "embedded Redis" in text
        # The defaults' bound (2 web processes x 10 + 2 worker processes + 3), checked first.
        assert re.search(r"Database connections: at most 25 of the server's \d+", text)

        opener, jar = browser()
        status, url, body = log_in(opener, jar, base, "alice", "demo")
        assert (status, urllib.parse.urlsplit(url).path) == (200, "/")
        assert "Vision" in body
        with opener.open(f"{base}/") as dashboard:
            assert dashboard.status == 200

        # Beat sends the heartbeat, the worker runs it: the dashboard says both are alive.
        def both_alive():
            with opener.open(f"{base}/") as page:
                return page.read().decode().count('data-alive="true"') == 2

        wait_until(both_alive, timeout=60, interval=1)
        family = psutil.Process(proc.pid).children(recursive=True)
        assert len(family) >= 5  # web, its workers, worker, beat, the database

        save_a_setting(base)
    finally:
        code = stop(proc)
    assert code == 0, output.text()[-3000:]
    assert "Stopped." in output.text()
    _gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, [p.info for p in alive]

    proc = start(supervisor_argv, supervisor_env)
    output = Output(proc.stdout)
    try:
        wait_for_banner(output)
        opener, jar = browser()
        log_in(opener, jar, base, "admin", "demo")
        with opener.open(f"{base}/settings/") as page:
            body = page.read().decode()
        assert re.search(r'name="max_resumes"[^>]*value="7"', body)
    finally:
        assert stop(proc) == 0, output.text()[-3000:]


def save_a_setting(base: str) -> None:
    opener, jar = browser()
    log_in(opener, jar, base, "admin", "demo")
    data = settings_form_data(max_resumes=7)
    data["csrfmiddlewaretoken"] = csrf_token(opener, f"{base}/settings/")
    form = urllib.parse.urlencode(data, doseq=True).encode()
    request = urllib.request.Request(f"{base}/settings/", data=form, headers={"Referer": base})
    with opener.open(request) as reply:
        assert "Saved 1 change" in reply.read().decode()


def csrf_token(opener, url) -> str:
    with opener.open(url) as page:
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode())[1]

"""The supervisor of one local workload: ``python -m resources.backends.local.supervisor
<workload folder>``, started by :class:`LocalRunner.submit` and gone when the workload ends.

Why a process of its own: the console's workers must never wait for a job (stop waits out a
graceful period; a peer wait takes up to a minute), and a job must survive the restart of
the worker that submitted it. The supervisor is the parent of every replica, so it alone
learns their true exit codes; it is also a child subreaper, so processes a replica leaves
behind (daemons, ``setsid`` escapees) become its children and die with the workload.

It reads ``launch.json`` (what the runner prepared), writes ``state.json`` on every change
and each replica's ``pid`` and ``exit_code``, and obeys ``stop.json`` (woken by SIGUSR1).
SIGTERM to the supervisor itself stops the workload with its own graceful period.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from resources.backends.local import steps
from resources.backends.local.host import (
    identity,
    read_json,
    reaped,
    signal_group,
    write_json,
)
from resources.backends.local.isolation import isolate_saying_why
from resources.backends.local.replica import Replica

TICK = 0.05  # seconds between looks at the replicas: a stop is acted on within this
KILL_WAIT = 5.0  # after SIGKILL, how long a process stuck in the kernel may delay the end
PR_SET_CHILD_SUBREAPER = 36
STUCK = "some processes did not end even on SIGKILL"


class Supervisor:
    def __init__(self, folder: Path):
        self.folder = folder
        self.launch = read_json(folder / "launch.json")
        self.replicas = [Replica(spec) for spec in self.launch["replicas"]]
        self.by_pid: dict[int, Replica] = {}
        self.state = "starting"
        self.reason = ""
        self.outcome: tuple[str, str] | None = None  # (final state, reason), once decided
        self.deadline: float | None = None  # SIGKILL after this (shutting down)
        self.kill_sent_at: float | None = None
        self.waiting_since: float | None = None  # entry replicas wait for their peers
        self.terminated = False  # SIGTERM to the supervisor itself
        self.saved: dict | None = None
        self.notes: list[dict] = []  # data preparation and scripts, for the console's events
        self.held: list = []  # prepared data in use (local_prepared.Prepared)
        self.mounted: dict[str, str] = {}  # a prepared copy -> the target it is mounted at

    # --- main loop -------------------------------------------------------------------------

    def run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGUSR1, lambda *_: None)  # a stop request: just wake up
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.decide()  # stopped before it started: start nothing
        if self.outcome is None:
            steps.prepare_data(self)
        if self.outcome is None:
            steps.run_scripts(self, "before_start")
        peers = [r for r in self.replicas if not r.spec["runs_entry"]]
        if self.outcome is not None:
            pass
        elif self.launch["wait_for_peers"] and peers:
            for replica in peers:
                self.start(replica)
            self.waiting_since = time.monotonic()
        else:
            for replica in self.replicas:
                self.start(replica)
        while True:
            self.reap()
            if self.outcome is None:
                self.watch_peers()
                self.decide()
            if self.outcome is not None:
                # Decided; the state follows once every process has ended.
                self.reason = self.outcome[1]
                if self.shut_down():
                    break
            self.save()
            time.sleep(TICK)
        if any(r.pid is not None for r in self.replicas):  # the command ran: J23's scripts
            if self.outcome[0] == "failed":
                steps.run_scripts(self, "on_failure")
            steps.run_scripts(self, "after_stop")
        steps.release_data(self)
        self.state, self.reason = self.outcome
        for replica in self.replicas:
            if replica.state == "pending":
                replica.state, replica.reason = "stopped", "never started"
        self.save()

    def _on_sigterm(self, *_) -> None:
        self.terminated = True

    def save(self) -> None:
        if self.outcome is None and self.state == "starting":
            started = all(r.pid is not None or r.exit_code is not None for r in self.replicas)
            ready = all(r.state != "starting" for r in self.replicas)
            if started and ready:
                self.state = "running"
        data = {
            "state": self.state,
            "reason": self.reason,
            "replicas": [r.record() for r in self.replicas],
            "notes": self.notes,
            "mounted": self.mounted,
        }
        if data != self.saved:
            write_json(self.folder / "state.json", data)
            self.saved = data

    # --- starting replicas -----------------------------------------------------------------

    def start(self, replica: Replica) -> None:
        spec = replica.spec
        log = os.open(replica.dir / "log.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if not spec["runs_entry"] and not spec["argv"]:
                pid = self.fork_peer(replica, log)
            else:
                pid = self.spawn(replica, spec, log)
        finally:
            os.close(log)
        if pid is None:
            return
        replica.pid = pid
        replica.process = identity(pid)
        replica.state = "starting" if self.waits_for(replica) else "running"
        self.by_pid[pid] = replica
        (replica.dir / "pid").write_text(f"{pid} {(replica.process or {}).get('start', 0)}\n")

    def waits_for(self, replica: Replica) -> bool:
        """Whether the entry replicas wait for this one to accept connections."""
        return self.launch["wait_for_peers"] and not replica.spec["runs_entry"]

    def popen(self, spec: dict, argv: list[str], log: int) -> int:
        """Start ``argv`` as the replica's process would be: its identity, namespace,
        environment and working folder, its output to ``log``. Returns the pid."""
        user = self.launch.get("user")
        plan = spec.get("isolation")
        if plan:
            # The namespace is made as root, then the child becomes the job's identity.
            as_user = {"preexec_fn": lambda: isolate_saying_why(plan)}
        elif user:
            groups = user.get("groups", [])
            as_user = {"user": user["uid"], "group": user["gid"], "extra_groups": groups}
        else:
            as_user = {}
        process = subprocess.Popen(
            argv,
            cwd=spec["cwd"],
            env=spec["env"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: signals reach all it starts
            umask=0o022,
            **as_user,
        )
        # We reap with waitpid(-1), escapees reparented to us included. Marking the Popen as
        # done keeps subprocess's own clean-up of dropped Popen objects from reaping the
        # process first and taking its exit code with it.
        process.returncode = 0
        return process.pid

    def spawn(self, replica: Replica, spec: dict, log: int) -> int | None:
        try:
            return self.popen(spec, spec["argv"], log)
        except subprocess.SubprocessError:
            reason = "could not isolate the job from the others (see its log)"
            self.ended(replica, 126, reason=reason)
            return None
        except OSError as error:
            # The shells' convention: 127 when there is no such program, 126 when it cannot
            # be executed. Said in the log too, where the user looks first.
            # Named as the job knows it (/workspace/...), not as this machine's folder.
            program = spec.get("program") or spec["argv"][0]
            missing = isinstance(error, FileNotFoundError | NotADirectoryError)
            code, reason = (
                (127, f"command not found: {program}")
                if missing
                else (126, f"command not executable: {program} ({error.strerror})")
            )
            os.write(log, f"console: {reason}\n".encode())
            self.ended(replica, code, reason=reason)
            return None

    def fork_peer(self, replica: Replica, log: int) -> int:
        """A peer that runs no command (an MPI worker other than 0): what stands in for its
        sshd. It listens on its own address until the workload ends, so the entry replica
        can tell it is reachable. Forked, not executed: the job user may not be able to run
        the console's Python, and this needs nothing but a socket."""
        spec = replica.spec
        pid = os.fork()
        if pid:
            return pid
        code = 1
        try:
            for signum in (signal.SIGTERM, signal.SIGUSR1, signal.SIGHUP, signal.SIGINT):
                signal.signal(signum, signal.SIG_DFL)
            os.setsid()
            os.dup2(log, 1)
            os.dup2(log, 2)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.chdir(spec["cwd"])
            user = self.launch.get("user")
            if user:
                os.setgroups(user.get("groups", []))
                os.setgid(user["gid"])
                os.setuid(user["uid"])
            server = socket.create_server((spec["address"], spec["peer_port"]), backlog=64)
            os.write(
                1,
                f"{replica.label}: peer of the entry replica, reachable at "
                f"{spec['address']}:{spec['peer_port']}; waiting until the job ends\n".encode(),
            )
            while True:
                connection, _ = server.accept()
                connection.close()
        except BaseException as error:  # whatever it is: say it and leave
            with contextlib.suppress(OSError):
                os.write(2, f"console: peer failed: {error!r}\n".encode())
        finally:
            os._exit(code)

    # --- watching ----------------------------------------------------------------------------

    def reap(self) -> None:
        for pid, code, signum in reaped():
            replica = self.by_pid.get(pid)
            if replica is not None:
                self.ended(replica, code, signum=signum)

    def ended(self, replica: Replica, code: int, *, signum: int = 0, reason: str = "") -> None:
        replica.exit_code = code
        replica.ended_at = time.monotonic()
        if reason:
            replica.state, replica.reason = "failed", reason
        elif replica.signalled:
            replica.state = "stopped"
            replica.reason = (
                f"killed after {self.grace():g} s: it did not end on SIGTERM"
                if replica.killed
                else "stopped"
            )
        elif code == 0:
            replica.state, replica.reason = "succeeded", "exited with code 0"
        else:
            replica.state = "failed"
            replica.reason = (
                f"was killed by signal {signum} ({signal.Signals(signum).name})"
                if signum
                else f"exited with code {code}"
            )
        (replica.dir / "exit_code").write_text(f"{code}\n")

    def watch_peers(self) -> None:
        """Seed 002: the entry command starts only once every peer can be reached."""
        if self.waiting_since is None:
            return
        waiting = [r for r in self.replicas if r.state == "starting"]
        for replica in waiting:
            spec = replica.spec
            with contextlib.suppress(OSError):
                socket.create_connection((spec["address"], spec["peer_port"]), 0.2).close()
                replica.state = "running"
        waiting = [r for r in self.replicas if r.state == "starting"]
        if not waiting:
            self.waiting_since = None
            for replica in self.replicas:
                if replica.spec["runs_entry"] and replica.state == "pending":
                    self.start(replica)
            return
        timeout = self.launch["peer_timeout_seconds"]
        if time.monotonic() - self.waiting_since > timeout:
            labels = ", ".join(r.label for r in waiting)
            self.outcome = ("failed", f"peers not reachable after {timeout} s: {labels}")

    def decide(self) -> None:
        stop = read_json(self.folder / "stop.json")
        if stop is not None or self.terminated:
            self.outcome = ("stopped", "stopped on request")
            return
        failed = [r for r in self.replicas if r.state == "failed"]
        if failed:
            first = min(failed, key=lambda r: r.ended_at)
            # "command not found: pyhton" reads best alone: every entry runs the same command.
            alone = first.reason.startswith("command not")
            self.outcome = ("failed", first.reason if alone else f"{first.label} {first.reason}")
            return
        awaited = [r for r in self.replicas if r.spec["awaited"]]
        if all(r.state == "succeeded" for r in awaited):
            labels = ", ".join(r.label for r in awaited)
            self.outcome = ("succeeded", f"{labels} exited with code 0")

    # --- ending --------------------------------------------------------------------------------

    def grace(self) -> float:
        """Seconds between SIGTERM and SIGKILL: a stop request brings its own (the shortest
        asked for wins); the workload's when it ends on its own."""
        stop = read_json(self.folder / "stop.json")
        if stop is not None:
            return float(stop["graceful_seconds"])
        return float(self.launch["graceful_seconds"])

    def shut_down(self) -> bool:
        """Advance the shutdown; True once nothing of the workload is left."""
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.grace()
            for replica in self.replicas:
                if replica.alive:
                    replica.signalled = True
                    signal_group(replica.pid, signal.SIGTERM)
            # Whatever left its replica's group gets its SIGTERM too, but once only.
            self.signal_descendants(signal.SIGTERM, skip_groups={r.pid for r in self.replicas})
        else:
            # A later stop request may shorten the wait, never lengthen it.
            requested = read_json(self.folder / "stop.json")
            if requested is not None:
                asked = requested["requested_at"] + requested["graceful_seconds"]
                self.deadline = min(self.deadline, now + max(0.0, asked - time.time()))
        live = [r for r in self.replicas if r.alive]
        descendants = self.descendants()
        if not live and not descendants:
            return True
        if now >= self.deadline and self.kill_sent_at is None:
            self.kill_sent_at = now
            for replica in live:
                replica.killed = True
                signal_group(replica.pid, signal.SIGKILL)
            self.signal_descendants(signal.SIGKILL)
        elif self.kill_sent_at is not None:
            self.signal_descendants(signal.SIGKILL)  # whatever was forked in between
            if now - self.kill_sent_at > KILL_WAIT:
                # Stuck in the kernel (a hung file system): nothing more we can do but say so.
                self.outcome = (self.outcome[0], f"{self.outcome[1]}; {STUCK}")
                return True
        return False

    def descendants(self) -> list:
        import psutil

        with contextlib.suppress(psutil.Error):
            return psutil.Process().children(recursive=True)
        return []

    def signal_descendants(self, signum: int, skip_groups: set | None = None) -> None:
        import psutil

        for process in self.descendants():
            with contextlib.suppress(psutil.Error, OSError):
                if skip_groups and os.getpgid(process.pid) in skip_groups:
                    continue
                process.send_signal(signum)


def main(argv: list[str]) -> int:
    folder = Path(argv[1])
    # Fork once more and let the runner reap our parent at once: the runner's process never
    # collects a zombie from us, however long it lives.
    child = os.fork()
    if child:
        write_json(folder / "supervisor.json", identity(child))
        return 0
    try:
        Supervisor(folder).run()
    except BaseException:
        import traceback

        traceback.print_exc()
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

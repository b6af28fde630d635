"""A tool as the backend runs it: one replica, the owner's identity, the mounts it needs, a
Unix socket the proxy reaches. The ORM is read here; the result is the backend's plain
:class:`Workload`."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext_noop

from console.words import said
from jobs.models import DevEnvironment, Job, Tool
from jobs.workspace import job_mounts
from resources.backends.base import DEFAULT_PATH, ReplicaSpec, Workload
from resources.catalog import mounts, storage
from resources.clusters import backend_of
from resources.inventory import identity

# In-container paths under /workspace, which the local runner lays out in the replica's own
# folder (only the job's user may enter it). Hidden: JupyterLab's file browser skips it.
CONSOLE_FOLDER = "/workspace/.console"
# The socket lies in the workspace itself: the one folder of the layout the user owns.
SOCKET_NAME = ".console-tool.sock"
SOCKET = f"/workspace/{SOCKET_NAME}"
TENSORBOARD_LAUNCHER = f"{CONSOLE_FOLDER}/tensorboard_socket.py"
README = (
    f"{CONSOLE_FOLDER}/README.txt",
    "The training console reaches this tool through /workspace/.console-tool.sock.\n",
)
GRACEFUL_SECONDS = 5
# Run with the image's Python, not the console's: it imports nothing of the console.
LAUNCHER_SOURCE = Path(__file__).resolve().parent / "tensorboard_socket.py"


class Unavailable(Exception):
    """The tool cannot start; ``said`` is the reason in words a user reads."""

    def __init__(self, message):
        super().__init__(str(message))
        self.said = message


def replica_name(tool: Tool) -> str:
    return f"{tool.kind}-{tool.pk}"


def socket_path(tool: Tool) -> Path:
    """Where the proxy finds the tool's socket on this machine."""
    return backend_of(None).host_path(tool.workload_id, replica_name(tool), SOCKET)


def runtime_with(program: str, image) -> Path | None:
    """The folder of a Python environment that has ``bin/<program>``: the image's own runtime
    first (the tool then runs with the job's Python and packages), else any runtime
    ``make run`` built."""
    candidates = []
    if image is not None and image.local_runtime:
        candidates.append(Path(image.local_runtime))
    root = Path(settings.RUNTIMES_DIR)
    if root.is_dir():
        candidates += sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    for folder in candidates:
        if (folder / "bin" / program).exists():
            return folder
    return None


def _replica(tool: Tool, argv: list[str], env: dict, files: dict, mount_list) -> ReplicaSpec:
    return ReplicaSpec(
        name=replica_name(tool),
        role=tool.kind,
        index=0,
        argv=tuple(argv),
        env=env,
        files=files,
        mounts=tuple((str(m.source), str(m.target), bool(m.read_only)) for m in mount_list),
        cpu_millicores=1000,
        memory_mib=2048,
    )


def _workload(tool: Tool, owner, replica: ReplicaSpec, labels: dict) -> Workload:
    return Workload(
        id=tool.workload_id,
        replicas=(replica,),
        run_as=identity.run_as_for(owner),
        graceful_seconds=GRACEFUL_SECONDS,
        labels={"console.io/tool": str(tool.pk), **labels},
    )


def _path(runtime: Path) -> str:
    return f"{runtime / 'bin'}:{DEFAULT_PATH}"


def tensorboard(tool: Tool, job: Job) -> Workload:
    """TensorBoard over everything the job wrote: its output folder, read-only, which holds
    each batch sub-task's folder (SPEC O9: every sub-task's runs side by side)."""
    runtime = runtime_with("tensorboard", job.image if job.image_id else None)
    if runtime is None:
        raise Unavailable(
            said(gettext_noop("No Python environment with TensorBoard is installed."))
        )
    outputs = mounts.mount_outputs(job.output_path)
    if not Path(outputs.source).is_dir():
        if job.attempts.filter(cluster__isnull=False).exists():
            # Tools run on the console's machine; a cluster's own storage is not mounted here.
            raise Unavailable(
                said(
                    gettext_noop(
                        "The job ran on a Kubernetes cluster whose storage this console does "
                        "not see: TensorBoard cannot read its output folder here."
                    )
                )
            )
        raise Unavailable(said(gettext_noop("The job has written nothing yet: no output folder.")))
    outputs = dataclasses.replace(outputs, read_only=True)
    argv = [
        "python", TENSORBOARD_LAUNCHER, "--socket", SOCKET, "--",
        "--logdir", mounts.OUTPUTS_TARGET, "--path_prefix", tool.proxy_url().rstrip("/"),
        "--reload_interval", "5", "--load_fast", "false",
    ]  # fmt: skip
    files = {
        TENSORBOARD_LAUNCHER: LAUNCHER_SOURCE.read_text(encoding="utf-8"),
        README[0]: README[1],
    }
    replica = _replica(tool, argv, {"PATH": _path(runtime)}, files, [outputs])
    return _workload(tool, job.owner, replica, {"console.io/job": str(job.pk)})


def jupyter(tool: Tool, env: DevEnvironment) -> Workload:
    """JupyterLab (with its terminal) as the environment's owner, with the image's Python,
    everything the job it came from mounts (its algorithm, datasets, models, volumes and
    outputs) read-only where that job has them, and a folder of the environment's own for
    notebooks at /workspace/work (kept across restarts)."""
    runtime = runtime_with("jupyter-lab", env.image)
    if runtime is None:
        raise Unavailable(said(gettext_noop("No Python environment with JupyterLab is installed.")))
    found = []
    if env.from_job is not None:
        # What the job mounts, as the job has it, all read-only: the environment explores.
        found += [dataclasses.replace(m, read_only=True) for m in job_mounts(env.from_job)]
        found = [m for m in found if m.kind != mounts.MountKind.OUTPUTS or Path(m.source).is_dir()]
    elif env.algorithm is not None:
        found.append(mounts.mount_algorithm(env.algorithm, env.owner, read_only=True))
    targets = {m.target for m in found}
    for version in env.dataset_versions.select_related("dataset"):
        mount = mounts.mount_dataset(version, env.owner, read_only=True)
        if mount.target not in targets:
            found.append(mount)
    work = work_folder(env)
    storage.check_writable(env.owner, work)
    found.append(
        mounts.Mount(
            str(mounts.storage_source(work)), WORK_TARGET, False, mounts.MountKind.VOLUME, work
        )
    )
    argv = [
        # Relative to its working folder (/workspace): a socket's path holds 107 bytes.
        "jupyter-lab", "--no-browser", f"--ServerApp.sock={SOCKET_NAME}",
        "--ServerApp.sock_mode=0600", f"--ServerApp.base_url={tool.proxy_url()}",
        f"--ServerApp.root_dir={mounts.WORKSPACE}", "--ServerApp.allow_remote_access=True",
        # New notebooks go where they are kept: the environment's own folder.
        "--ContentsManager.preferred_dir=work",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.app_settings_dir={LAB_SETTINGS}",
    ]  # fmt: skip
    variables = {
        "PATH": _path(runtime),
        "JUPYTER_TOKEN": tool.secret,
        # A search path of its own, not JUPYTER_CONFIG_DIR: JupyterLab writes its user
        # settings and workspaces into that one, and this folder is the console's.
        "JUPYTER_CONFIG_PATH": JUPYTER_CONFIG,
    }
    files = {
        README[0]: README[1],
        f"{LAB_SETTINGS}/overrides.json": LAB_OVERRIDES,
        f"{JUPYTER_CONFIG}/jupyter_server_config.json": TERMINAL_CONFIG,
        TERMINAL: terminal_script(env),
    }
    replica = _replica(tool, argv, variables, files, found)
    return _workload(tool, env.owner, replica, {"console.io/devenv": str(env.pk)})


WORK_TARGET = str(mounts.WORKSPACE / "work")
LAB_SETTINGS = f"{CONSOLE_FOLDER}/lab-settings"
# The machine has no way out to the internet: JupyterLab must not ask to fetch news.
LAB_OVERRIDES = json.dumps(
    {
        "@jupyterlab/apputils-extension:notification": {
            "fetchNews": "false",
            "checkForUpdates": False,
        }
    }
)

JUPYTER_CONFIG = f"{CONSOLE_FOLDER}/jupyter"
TERMINAL = f"{CONSOLE_FOLDER}/terminal.sh"
# Left to itself, jupyter_server starts a terminal as `sh -l` (its output is no terminal), and
# the login profile puts the system's PATH back in front of the image's runtime: no python.
# The script is read by sh, since the files of a replica are not executable.
TERMINAL_CONFIG = json.dumps(
    {"ServerApp": {"terminado_settings": {"shell_command": ["/bin/sh", TERMINAL]}}}
)


def terminal_script(env: DevEnvironment) -> str:
    """What JupyterLab's terminal runs: bash as the debug terminal's is (interactive, no
    profile or rc file, so PATH stays as JupyterLab has it), with a prompt naming the
    environment, in the environment's own folder unless JupyterLab asked for another."""
    prompt = shlex.quote(f"\\u@{env.name}:\\w\\$ ")
    return (
        # Asked for without a folder, a terminal starts at the server's root.
        f'if [ "$(pwd -P)" = "$(cd {mounts.WORKSPACE} && pwd -P)" ]; then cd {WORK_TARGET}; fi\n'
        f"SHELL=/bin/bash PS1={prompt} exec /bin/bash --norc --noprofile -i\n"
    )


def work_folder(env: DevEnvironment) -> str:
    """The environment's own folder in its owner's storage: notebooks outlive the server."""
    return f"users/{env.owner.get_username()}/devenvs/{env.name}-{env.pk}"

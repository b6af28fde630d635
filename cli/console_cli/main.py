"""console-cli: the training console's jobs from a terminal or a script."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import yaml

from console_cli.client import Client, Refused, Settings, Unreachable

ENDED = {"succeeded": 0, "error": 1, "stopped": 2, "expired": 2}
UNREACHABLE = 3
COLUMNS = ("id", "name", "status", "priority", "mode", "nodes", "owner", "project")


def client(ctx) -> Client:
    settings = Settings.load()
    if settings is None:
        raise click.ClickException("Not logged in: run `console-cli login URL` first.")
    return Client(settings, language=ctx.obj.get("language"))


def out(ctx, value, table=None) -> None:
    """``value`` as JSON with --json, else as ``table`` draws it (or as JSON)."""
    if ctx.obj.get("json") or table is None:
        click.echo(json.dumps(value, indent=2, ensure_ascii=False))
    else:
        table(value)


def rows(jobs: list[dict]) -> None:
    cells = [[str(job.get(c, "")) for c in COLUMNS] for job in jobs]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(COLUMNS)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    for row in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def read_job(path: str) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise click.ClickException(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise click.ClickException(f"{path}: a job is a mapping of the job form's fields.")
    return data


@click.group()
@click.option("--json", "as_json", is_flag=True, help="Print the console's answers as JSON.")
@click.option("--language", help="The language of the console's words, e.g. en or zh-hans.")
@click.pass_context
def cli(ctx, as_json: bool, language: str | None) -> None:
    """The training console's jobs from a terminal or a script."""
    ctx.obj = {"json": as_json, "language": language}


def main() -> None:
    """Refusals and an unreachable console end with a message, never a traceback."""
    try:
        cli(standalone_mode=False)
    except Refused as exc:
        for line in exc.lines():
            click.echo(line, err=True)
        sys.exit(1)
    except Unreachable as exc:
        click.echo(f"The console did not answer: {exc}", err=True)
        sys.exit(UNREACHABLE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.exit(1)


@cli.command()
@click.argument("url")
@click.option("--token", prompt=True, hide_input=True, help="A token from your API tokens page.")
@click.pass_context
def login(ctx, url: str, token: str) -> None:
    """Check a token against the console at URL and keep both."""
    settings = Settings(url.rstrip("/"), token.strip())
    me = Client(settings, language=ctx.obj.get("language")).get("/me")
    path = settings.save()
    click.echo(f"Logged in as {me['username']} ({me['scope']}); kept in {path}.")


@cli.command()
@click.argument("job_yaml", type=click.Path(exists=True, dir_okay=False))
@click.pass_context
def submit(ctx, job_yaml: str) -> None:
    """Create the job JOB_YAML describes; print its id."""
    job = client(ctx).post("/jobs", read_job(job_yaml))
    out(ctx, job, lambda j: click.echo(f"{j['id']}  {j['name']}  {j['status']}  {j['url']}"))


@cli.command()
@click.argument("job_yaml", type=click.Path(exists=True, dir_okay=False))
@click.pass_context
def predict(ctx, job_yaml: str) -> None:
    """Where the job JOB_YAML describes would start if submitted now."""
    answer = client(ctx).post("/queue/predict", read_job(job_yaml))

    def said(a):
        if a["refused"]:
            click.echo(f"It could never start: {a['refused']}. {a.get('hint') or ''}".strip())
        elif a["starts_now"]:
            click.echo(f"It would start now on {a['spec']}.")
        else:
            click.echo(f"It would wait: place {a['position']} of {a['queue_length']}, "
                       f"starting by {a['latest_start']} at the latest; {a['why']}.")  # fmt: skip
        if a.get("borrowed"):
            click.echo(a["borrowed"])

    out(ctx, answer, said)


@cli.command(name="ls")
@click.option("--status", help="queued, running, succeeded, error, stopped or expired.")
@click.option("--name", help="Jobs whose name holds this.")
@click.option("--limit", default=25, show_default=True, help="How many (up to 100).")
@click.pass_context
def list_jobs(ctx, status, name, limit: int) -> None:
    """The jobs you may see, newest first."""
    page = client(ctx).get("/jobs", status=status, name=name, per_page=limit)
    out(ctx, page["jobs"], rows)


@cli.command()
@click.argument("job_id", type=int)
@click.option("-f", "--follow", is_flag=True, help="Keep printing as the log grows.")
@click.option("--replica", help="Whose log (a node's name); the entry node's by default.")
@click.pass_context
def logs(ctx, job_id: int, follow: bool, replica: str | None) -> None:
    """A job's log (its latest run)."""
    api, offset = client(ctx), 0
    while True:
        answer = api.get(f"/jobs/{job_id}/logs", offset=offset, replica=replica)
        click.echo(answer["text"], nl=False)
        offset = answer["offset"]
        if answer["more"]:
            continue
        if not follow or not answer["live"]:
            return
        time.sleep(1)


@cli.command()
@click.argument("job_id", type=int)
@click.pass_context
def stop(ctx, job_id: int) -> None:
    """Stop a job."""
    job = client(ctx).post(f"/jobs/{job_id}/stop")
    out(ctx, job, lambda j: click.echo(f"{j['id']}  {j['name']}  {j['status']}"))


@cli.command()
@click.argument("job_id", type=int)
@click.option("--set", "changes", multiple=True, metavar="FIELD=VALUE",
              help="A field of the copy, e.g. --set name=retrain-2 (YAML values).")  # fmt: skip
@click.pass_context
def clone(ctx, job_id: int, changes: tuple[str, ...]) -> None:
    """A new job like JOB_ID, with what --set changes."""
    body = {}
    for change in changes:
        field, sep, value = change.partition("=")
        if not sep:
            raise click.BadParameter(f"{change!r}: write FIELD=VALUE", param_hint="--set")
        body[field.strip()] = yaml.safe_load(value) if value else ""
    job = client(ctx).post(f"/jobs/{job_id}/clone", body)
    out(ctx, job, lambda j: click.echo(f"{j['id']}  {j['name']}  {j['status']}  {j['url']}"))


@cli.command()
@click.argument("job_id", type=int)
@click.pass_context
def export(ctx, job_id: int) -> None:
    """A job as job.yaml (what `submit` takes), on standard output."""
    click.echo(client(ctx).text(f"/jobs/{job_id}/yaml"), nl=False)


@cli.command()
@click.argument("job_id", type=int)
@click.option("--interval", default=5.0, show_default=True, help="Seconds between looks.")
@click.option("--timeout", type=float, help="Give up after this many seconds (exit 4).")
@click.pass_context
def wait(ctx, job_id: int, interval: float, timeout: float | None) -> None:
    """Wait for a job to end; exit 0 if it succeeded, 1 on error, 2 if stopped or expired."""
    api, began = client(ctx), time.monotonic()
    while True:
        job = api.get(f"/jobs/{job_id}")
        if job["status"] in ENDED:
            out(ctx, job, lambda j: click.echo(f"{j['name']}: {j['status_label']}. {j['reason']}"))
            sys.exit(ENDED[job["status"]])
        if timeout is not None and time.monotonic() - began > timeout:
            click.echo(f"{job['name']} is still {job['status']}.", err=True)
            sys.exit(4)
        time.sleep(interval)

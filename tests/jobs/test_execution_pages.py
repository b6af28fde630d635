"""The live parts of the detail page (SPEC O2) on a job that really runs: logs that follow
as they grow and survive a reload, the whole log as a download, resource use charts, the
status poll, and what people without access or with bad parameters get."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from jobs.execution import runs, stopping
from jobs.models import Phase, UsageSample
from tests.helpers import wait_until
from tests.jobs.execution_helpers import admit_and_launch, make_job, program, wait_for_phase

pytestmark = pytest.mark.usefixtures("local_runs")

TALKER = """
import sys, time
for i in range(int(sys.argv[1])):
    print(f"line {i}", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def talking_job(alice, vision, run_cluster, lines=400, pause=0.05):
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command=f"python3 /workspace/algorithm/talk.py {lines} {pause}",
        graceful_shutdown_seconds=1,
    )
    program(job, "talk.py", TALKER)
    return job


def test_the_log_follows_from_where_the_page_left_off(client, alice, vision, run_cluster):
    job = talking_job(alice, vision, run_cluster)
    admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)
    client.force_login(alice)
    page = client.get(job.get_absolute_url()).content.decode()
    assert 'id="log-text"' in page and "Following the log as it grows" in page
    follow = re.search(r'hx-get="([^"]*logs/more/[^"]*)"', page).group(1).replace("&amp;", "&")
    offset = int(re.search(r"offset=(\d+)", follow).group(1))
    seen = re.search(r'id="log-text"[^>]*>(.*?)</pre>', page, re.S).group(1)

    def grown():
        response = client.get(follow)
        assert response.status_code == 200
        return "line " in response.content.decode() and response.content.decode()

    more = wait_until(grown, 10, 0.2)
    assert 'hx-swap-oob="beforeend:#log-text"' in more
    new = re.search(r"<pre[^>]*>(.*?)</pre>", more, re.S).group(1)
    first_new = int(re.search(r"line (\d+)", new).group(1))
    last_seen = [int(n) for n in re.findall(r"line (\d+)", seen)]
    assert first_new == (last_seen[-1] + 1 if last_seen else 0)  # nothing lost, nothing twice
    assert int(re.search(r"offset=(\d+)", more).group(1)) > offset


def test_a_finished_log_ends_following_and_downloads_whole(client, alice, vision, run_cluster):
    job = talking_job(alice, vision, run_cluster, lines=10000, pause=0)
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED)
    client.force_login(alice)
    page = client.get(job.get_absolute_url()).content.decode()
    assert "End of log." in page and "showing the end" in page  # 10,000 lines > the tail
    assert "line 9999" in page and "line 0\n" not in page
    download = client.get(reverse("job_log_download", args=[job.pk]) + "?attempt=1")
    assert download["Content-Disposition"].endswith(f'{job.name}-1-{job.name}-worker-0.log"')
    body = b"".join(download.streaming_content).decode()
    assert body.splitlines() == [f"line {i}" for i in range(10000)]


def test_usage_is_sampled_and_drawn_per_node(client, settings, alice, vision, run_cluster):
    settings.USAGE_SECONDS = 1
    job = make_job(
        alice,
        vision,
        run_cluster["cpu"],
        command="python3 -c 'while True: pass'",
        graceful_shutdown_seconds=1,
    )
    admit_and_launch()
    wait_for_phase(job, Phase.RUNNING)

    def sampled_twice():
        runs.sync()
        return UsageSample.objects.filter(attempt__job=job).count() >= 2

    wait_until(sampled_twice, 15, 0.5)
    samples = UsageSample.objects.filter(attempt__job=job)
    # A spinning process takes a core; on a loaded two-core machine it still gets
    # well above the near-zero share an idle one shows.
    assert max(s.cpu_percent for s in samples) > 10
    assert all(s.memory_mib > 1 for s in samples)
    client.force_login(alice)
    usage = client.get(reverse("job_usage", args=[job.pk])).content.decode()
    assert usage.count("<polyline") == 2  # CPU and memory; this machine has no accelerator
    assert 'hx-trigger="every 10s"' in usage
    assert "peak" in usage
    stopping.request_stop(job, alice)
    wait_for_phase(job, Phase.STOPPED, timeout=10)
    assert (
        'hx-trigger="every 10s"'
        not in client.get(reverse("job_usage", args=[job.pk])).content.decode()
    )


def test_the_status_poll_reloads_on_a_new_phase(client, alice, vision, run_cluster):
    job = talking_job(alice, vision, run_cluster, lines=1)
    client.force_login(alice)
    url = reverse("job_live", args=[job.pk])
    same = client.get(url + "?phase=queued", headers={"HX-Request": "true"})
    assert same.status_code == 200 and 'id="job-events"' in same.content.decode()
    admit_and_launch()
    job = wait_for_phase(job, Phase.SUCCEEDED)
    moved = client.get(url + "?phase=queued", headers={"HX-Request": "true"})
    assert moved["HX-Refresh"] == "true"
    page = client.get(job.get_absolute_url()).content.decode()
    assert "job-live" not in page  # a finished job polls nothing


def test_a_queued_job_says_it_has_no_log_yet(client, alice, vision, run_cluster):
    job = make_job(alice, vision, run_cluster["cpu"])
    client.force_login(alice)
    page = client.get(job.get_absolute_url()).content.decode()
    assert "No log yet: the job has not started." in page
    assert "Resource use is sampled once the job runs." in page


@pytest.mark.parametrize(
    "query",
    [
        "?attempt=9",
        "?attempt=x",
        "?attempt=%C2%B2",  # "²": isdigit() but not int()
        "?attempt=1&replica=nobody",
        "?attempt=1&offset=-1",
        "?attempt=1&offset=%C2%B2",
    ],
)
def test_bad_log_parameters_get_404_not_500(client, alice, vision, run_cluster, query):
    job = talking_job(alice, vision, run_cluster, lines=1)
    admit_and_launch()
    wait_for_phase(job, Phase.SUCCEEDED)
    client.force_login(alice)
    names = (
        ["job_logs_more"]
        if "offset" in query
        else ["job_logs_more", "job_log_download", "job_logs"]
    )
    for name in names:
        assert client.get(reverse(name, args=[job.pk]) + query).status_code == 404


def test_an_offset_past_the_end_follows_from_the_end(client, alice, vision, run_cluster):
    job = talking_job(alice, vision, run_cluster, lines=1)
    admit_and_launch()
    wait_for_phase(job, Phase.SUCCEEDED)
    client.force_login(alice)
    url = reverse("job_logs_more", args=[job.pk]) + "?attempt=1&offset=" + "9" * 18
    response = client.get(url)
    assert response.status_code == 200  # not an OSError from seeking there
    assert "line 0" not in response.content.decode()


def test_outsiders_see_no_log(client, alice, charlie, vision, run_cluster):
    job = talking_job(alice, vision, run_cluster, lines=1)
    admit_and_launch()
    wait_for_phase(job, Phase.SUCCEEDED)
    client.force_login(charlie)
    for name in ("job_logs", "job_logs_more", "job_log_download", "job_usage", "job_live"):
        assert client.get(reverse(name, args=[job.pk]) + "?attempt=1").status_code == 404

"""Fault injection and isolated nodes as an admin uses them: a mistake kept as typed, a fault
injected and listed, a kill with nothing to kill, the isolated node on /cluster/ in both
languages, and its return to service; at a desktop's width and a phone's."""

import io
import re

import pytest
from django.core.management import call_command
from django.utils.translation import gettext_noop
from playwright.sync_api import expect

from console.words import said
from jobs.faults.recovery import check_words
from resources.inventory import faults
from resources.models import Allocation, Node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WHILE_RUNNING = gettext_noop("While running job %(job)s: %(what)s (%(check)s).")


@pytest.fixture
def demo(settings, tmp_path):
    settings.DEMO_MODE = True
    settings.RUNS_DIR = tmp_path / "runs"  # kill and freeze find no running job here
    call_command("seed_demo", stdout=io.StringIO())
    Allocation.objects.create(
        node=Node.objects.get(name="local-a"), holder_id=1, label="resnet-train",
        replica="worker-0", cpu_millicores=4000, memory_mib=8192, slots=[0, 1],
    )  # fmt: skip


def to_chinese(page, width):
    p = page.page
    if width < 1200:  # the language menu is in the collapsed navigation (navbar-expand-xl)
        p.click(".navbar-toggler")
        # Opened, not still sliding open: a menu opened mid-slide may stay out of sight.
        expect(p.locator("#navbar-main.collapse.show")).to_be_visible()
    language = p.locator("button[aria-label=Language]").first
    language.click()
    expect(language).to_have_attribute("aria-expanded", "true")
    p.locator("[data-testid=language-switcher] >> text=简体中文").first.click()
    p.wait_for_load_state()


@pytest.mark.parametrize("width", [1280, 390])
def test_inject_isolate_and_return(page, demo, width):
    p = page.page
    p.set_viewport_size({"width": width, "height": 900})
    page.log_in("admin", "demo")
    p.wait_for_url(re.compile(r"/$"))
    page.goto("/settings/faults/")
    local_a = Node.objects.get(name="local-a")
    option = p.locator(f"#id_node option[value='{local_a.pk}']")
    assert option.inner_text().startswith("local-a — ")  # labelled with its jobs
    assert "resnet-train" in option.inner_text()
    submit = p.locator("[data-testid=fault-form] button[type=submit]")

    # A mistake: a field error under "Which", everything typed kept.
    p.select_option("#id_node", str(local_a.pk))
    p.select_option("#id_kind", "disk")
    p.fill("#id_detail", "swap")
    submit.click()
    expect(p.locator("#id_detail.is-invalid")).to_be_visible()
    expect(p.locator("#id_detail")).to_have_value("swap")
    expect(p.locator("#id_kind")).to_have_value("disk")
    expect(p.locator("#id_node")).to_have_value(str(local_a.pk))
    page.errors.clear()  # the 422 answer is logged by the browser
    page.shot(f"faults-error-{width}")

    p.fill("#id_detail", "shm")
    submit.click()
    expect(p.locator("#messages")).to_contain_text("Injected on local-a: Disk full (shm).")
    active = p.locator("[data-testid=active-faults]")
    expect(active).to_contain_text("local-a")
    expect(active).to_contain_text("Disk full (shm)")

    p.select_option("#id_node", str(local_a.pk))
    p.select_option("#id_kind", "kill")
    submit.click()
    expect(p.locator("#messages")).to_contain_text(
        "No job process runs on local-a: nothing was killed."
    )
    expect(p.locator("[data-testid=recent-acts]")).to_contain_text("no job process runs there")
    page.shot(f"faults-{width}")

    # The platform isolates the node (as recovery does after a NIC fault).
    reason = said(WHILE_RUNNING, job="resnet-train", what=check_words("nic"), check="nic")
    faults.isolate(["local-a"], reason)
    page.goto("/cluster/")
    section = p.locator("[data-testid=isolated-nodes]")
    expect(section).to_contain_text("While running job resnet-train: network interface down (nic).")
    expect(section).to_contain_text("Disk full (shm)")
    page.shot(f"cluster-isolated-{width}")

    to_chinese(page, width)
    section = p.locator("[data-testid=isolated-nodes]")
    expect(section).to_contain_text("已隔离的节点")
    expect(section).to_contain_text("运行任务 resnet-train 时网卡故障（nic）。")
    expect(section).to_contain_text("磁盘已满（shm）")
    page.shot(f"cluster-isolated-zh-{width}")
    section.get_by_role("button", name="恢复服务").click()
    expect(p.locator("#messages")).to_contain_text("local-a 已恢复服务")
    expect(p.locator("#messages")).to_contain_text("已清除该节点上注入的 1 个故障。")
    expect(p.locator("[data-testid=isolated-nodes]")).to_have_count(0)
    assert Node.objects.schedulable().filter(name="local-a").exists()
    page.shot(f"cluster-returned-zh-{width}")

    page.goto("/settings/faults/")
    p.select_option("#id_node", str(local_a.pk))
    p.select_option("#id_kind", "board")
    p.fill("#id_detail", "9")
    p.locator("[data-testid=fault-form] button[type=submit]").click()
    expect(p.locator("#id_detail.is-invalid")).to_be_visible()
    expect(p.locator("[data-testid=fault-form]")).to_contain_text("请填写 0 到")
    page.errors.clear()
    page.shot(f"faults-error-zh-{width}")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_job_page_tells_its_faults(page, alice, vision, password, width):
    from jobs.models import FaultRecord
    from tests.jobs.factories import JobFactory

    job = JobFactory(owner=alice, project=vision, name="resnet-ddp", resume_enabled=True,
                     max_resumes=3)  # fmt: skip
    job.resumes_used = 2
    job.save()
    found = said(
        gettext_noop("Inspection found %(what)s on %(nodes)s (%(check)s)."),
        what=check_words("heartbeat"), nodes="gpu-3", check="heartbeat",
    )  # fmt: skip
    for used, item, nodes in ((1, "heartbeat", ["gpu-3"]), (2, "disk-size shm", ["gpu-5"])):
        FaultRecord.objects.create(
            job=job, item=item, nodes=nodes, message=str(found), said=found.as_json(),
            action=FaultRecord.Action.RESUME, isolated=True, used=used, allowed=3,
        )  # fmt: skip
    p = page.page
    p.set_viewport_size({"width": width, "height": 900})
    page.log_in("alice", password)
    p.wait_for_url(re.compile(r"/$"))
    page.goto(job.get_absolute_url())
    section = p.locator("[data-testid=faults]")
    expect(section).to_contain_text("Checkpoint resume: 2 of 3 used")
    expect(section).to_contain_text("resume 2 of 3")
    expect(section).to_contain_text("item=disk-size shm")
    section.scroll_into_view_if_needed()
    page.shot(f"job-faults-{width}")
    to_chinese(page, width)
    section = p.locator("[data-testid=faults]")
    expect(section).to_contain_text("断点续训：已用 2 次，共 3 次")
    expect(section).to_contain_text("巡检发现 gpu-3 上心跳丢失（heartbeat）。")
    expect(section).to_contain_text("续训 1/3")
    page.shot(f"job-faults-zh-{width}")

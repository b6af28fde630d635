"""Quotas (SPEC G1): the admin's pages, the tree they keep whole, the history, and what leads
and members see on /queue/ and their project's page."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from console.models import Department
from resources.models import Quota, QuotaChange
from tests.jobs.factories import JobFactory
from tests.resources.factories import (
    AcceleratorModelFactory,
    NodeFactory,
    NodeSpecFactory,
    ResourcePoolFactory,
    held,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def gpu():
    return AcceleratorModelFactory(name="A100")


@pytest.fixture
def research(vision, speech):
    department = Department.objects.create(name="Research", slug="research")
    vision.department = speech.department = department
    vision.save()
    speech.save()
    return department


def quota(gpu, guaranteed, maximum=None, pool=None, **holder) -> Quota:
    return Quota.objects.create(
        accelerator_model=gpu, pool=pool, guaranteed=Decimal(guaranteed),
        maximum=None if maximum is None else Decimal(maximum), **holder,
    )  # fmt: skip


def post(client, data: dict, url="/settings/quotas/new/"):
    return client.post(url, data)


def test_only_platform_admins_reach_the_settings(client, lead, alice):
    for user in (lead, alice):
        client.force_login(user)
        for url in ("/settings/quotas/", "/settings/quotas/new/", "/settings/departments/new/"):
            assert client.get(url).status_code == 403
    client.logout()
    assert client.get("/settings/quotas/").status_code == 302


def test_an_admin_sets_a_department_and_its_projects_quotas(client, admin, vision, speech, gpu):
    client.force_login(admin)
    response = client.post(
        "/settings/departments/new/",
        {"name": "Research", "slug": "research", "projects": [vision.pk, speech.pk]},
    )
    assert response.status_code == 302
    research = Department.objects.get(slug="research")
    assert set(research.projects.values_list("slug", flat=True)) == {"vision", "speech"}
    for holder, guaranteed, maximum in (
        (f"d{research.pk}", "8", "12"), (f"p{vision.pk}", "5", "10"), (f"p{speech.pk}", "3", ""),
    ):  # fmt: skip
        data = {"holder": holder, "accelerator_model": gpu.pk, "guaranteed": guaranteed,
                "maximum": maximum}  # fmt: skip
        assert post(client, data).status_code == 302
    assert Quota.objects.get(project=vision).maximum == 10
    assert Quota.objects.get(project=speech).maximum is None
    page = client.get("/settings/quotas/").content.decode()
    assert page.count('data-testid="quota-row"') == 3
    history = list(QuotaChange.objects.order_by("id").values_list("holder", "new_value"))
    assert history == [
        ("Research", ["Speech", "Vision"]),
        ("Research", {"guaranteed": "8", "maximum": "12"}),
        ("Vision", {"guaranteed": "5", "maximum": "10"}),
        ("Speech", {"guaranteed": "3", "maximum": None}),
    ]
    assert "5 guaranteed, at most 10" in page


def test_projects_guarantees_must_fit_the_departments(client, admin, research, vision, speech, gpu):
    quota(gpu, 8, 12, department=research)
    quota(gpu, 5, project=vision)
    client.force_login(admin)
    data = {"holder": f"p{speech.pk}", "accelerator_model": gpu.pk, "guaranteed": "4",
            "maximum": "13"}  # fmt: skip
    response = post(client, data)
    assert response.status_code == 422
    form = response.context["form"]
    assert form.errors["guaranteed"] == [
        "The guarantee of Research for this model is 8; its projects' guarantees would add up to 9."
    ]
    assert form.errors["maximum"] == ["Above the maximum of Research for this model, 12."]
    # Nothing typed is lost.
    html = response.content.decode()
    assert 'value="4"' in html and 'value="13"' in html
    assert not Quota.objects.filter(project=speech).exists()
    data |= {"guaranteed": "3", "maximum": "12"}
    assert post(client, data).status_code == 302


def test_a_department_cannot_promise_less_than_its_projects(client, admin, research, vision, gpu):
    department = quota(gpu, 8, 12, department=research)
    quota(gpu, 6, 10, project=vision)
    client.force_login(admin)
    response = post(
        client,
        {"holder": f"d{research.pk}", "accelerator_model": gpu.pk, "guaranteed": "5",
         "maximum": "9"},
        url=f"/settings/quotas/{department.pk}/",
    )  # fmt: skip
    assert response.status_code == 422
    errors = response.context["form"].errors
    assert "Its projects' guarantees for this model add up to 6" in errors["guaranteed"][0]
    assert "The maximum of Vision is 10" in errors["maximum"][0]
    department.refresh_from_db()
    assert (department.guaranteed, department.maximum) == (8, 12)


def test_a_pool_quota_counts_under_the_departments_all_nodes_one(
    client, admin, research, vision, gpu
):
    pool = ResourcePoolFactory(name="vision-reserved")
    quota(gpu, 4, department=research)
    client.force_login(admin)
    data = {"holder": f"p{vision.pk}", "accelerator_model": gpu.pk, "pool": pool.pk,
            "guaranteed": "5"}  # fmt: skip
    assert post(client, data).status_code == 422
    assert post(client, data | {"guaranteed": "4"}).status_code == 302


def test_moving_a_project_in_must_fit_too(client, admin, vision, speech, gpu):
    research = Department.objects.create(name="Research", slug="research")
    quota(gpu, 4, 6, department=research)
    quota(gpu, 3, 8, project=vision)
    quota(gpu, 2, project=speech)
    client.force_login(admin)
    url = f"/settings/departments/{research.pk}/"
    response = client.post(url, {"name": "Research", "slug": "research",
                                 "projects": [vision.pk, speech.pk]})  # fmt: skip
    assert response.status_code == 422
    errors = response.context["form"].errors["projects"]
    assert any("guarantees add up to 5, above the department's 4" in e for e in errors)
    assert any("The maximum of Vision is 8, above the department's 6" in e for e in errors)
    assert not research.projects.exists()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"guaranteed": "-1"}, "guaranteed", "greater than or equal to 0"),
        ({"guaranteed": "0.3"}, "guaranteed", "slices of 1/8"),
        ({"guaranteed": "4", "maximum": "2"}, "maximum", "below the guarantee"),
        ({"holder": "p999999"}, "holder", "Select a valid choice"),
        ({"holder": "x1"}, "holder", "Select a valid choice"),
        ({"guaranteed": "lots"}, "guaranteed", "Enter a number"),
        ({"accelerator_model": ""}, "accelerator_model", "required"),
    ],
)
def test_bad_values_get_a_message_on_their_field(client, admin, vision, gpu, data, field, message):
    client.force_login(admin)
    base = {"holder": f"p{vision.pk}", "accelerator_model": gpu.pk, "guaranteed": "2"}
    response = post(client, base | data)
    assert response.status_code == 422
    assert message in " ".join(response.context["form"].errors[field])
    assert not Quota.objects.exists()


def test_one_quota_per_holder_model_and_pool(client, admin, vision, gpu):
    quota(gpu, 2, project=vision)
    client.force_login(admin)
    response = post(client, {"holder": f"p{vision.pk}", "accelerator_model": gpu.pk,
                             "guaranteed": "3"})  # fmt: skip
    assert response.status_code == 422
    assert "already has a quota" in response.context["form"].errors["accelerator_model"][0]
    pool = ResourcePoolFactory()
    response = post(client, {"holder": f"p{vision.pk}", "accelerator_model": gpu.pk,
                             "pool": pool.pk, "guaranteed": "1"})  # fmt: skip
    assert response.status_code == 302


def test_removing_quotas_and_departments_is_recorded(client, admin, research, vision, gpu):
    mine = quota(gpu, 2, 4, project=vision)
    quota(gpu, 4, department=research)
    client.force_login(admin)
    assert client.post(f"/settings/quotas/{mine.pk}/delete/").status_code == 302
    assert client.post(f"/settings/departments/{research.pk}/delete/").status_code == 302
    assert not Quota.objects.exists()
    vision.refresh_from_db()
    assert vision.department is None
    removed = list(
        QuotaChange.objects.order_by("id").values_list("holder", "old_value", "new_value")
    )
    assert removed == [
        ("Vision", {"guaranteed": "2", "maximum": "4"}, None),
        ("Research", {"guaranteed": "4", "maximum": None}, None),
        ("Research", ["Speech", "Vision"], None),
    ]


def test_guarantees_beyond_the_cluster_are_pointed_out(client, admin, vision, speech, gpu):
    NodeFactory(board_count=8, accelerator_model=gpu)
    quota(gpu, 6, project=vision)
    client.force_login(admin)
    assert 'data-testid="overcommitted"' not in client.get("/settings/quotas/").content.decode()
    quota(gpu, 4, project=speech)
    page = client.get("/settings/quotas/").content.decode()
    assert "Guarantees of A100 boards add up to 10, but the cluster has 8" in page


@pytest.fixture
def busy(research, vision, speech, alice, charlie, gpu):
    """Vision holds 6 boards now (guaranteed 4: 2 borrowed) and waits for 4 more; speech
    holds 1. Research is guaranteed 8 and may hold 12."""
    quota(gpu, 8, 12, department=research)
    quota(gpu, 4, 8, project=vision)
    quota(gpu, 2, project=speech)
    node = NodeFactory(board_count=8, accelerator_model=gpu)
    now = timezone.now()
    held(node, now, None, "4", owner=alice, project=vision)
    held(node, now, None, "2", owner=alice, project=vision)
    held(node, now, 1, "3", owner=alice, project=vision)  # ended: not held now
    held(node, now, None, "1", owner=charlie, project=speech)
    spec = NodeSpecFactory(boards=Decimal(2), accelerator_model=gpu)
    JobFactory(owner=alice, project=vision, specs=[spec], nodes_asked=2)


def rows(response) -> list[list[str]]:
    html = response.content.decode()
    found = []
    for row in html.split('data-testid="quota-row"')[1:]:
        cells = row.split("</tr>", 1)[0].split("<td")[1:8]
        text = [" ".join(c.split(">", 1)[1].replace("</span>", "").split("<")[0].split())
                for c in cells]  # fmt: skip
        found.append(text)
    return found


@pytest.mark.usefixtures("busy")
def test_members_see_their_quota_on_the_queue_and_project_pages(client, alice, charlie):
    client.force_login(alice)
    queue = client.get("/queue/")
    assert queue.status_code == 200
    # Holder, boards of, guaranteed, maximum, used now, borrowed now, waiting.
    department_row = ["", "A100", "8", "12", "7", "0", "4"]
    vision_row = ["Vision", "A100", "4", "8", "6", "", "4"]
    got = rows(queue)
    assert [r[2:] for r in got] == [department_row[2:], vision_row[2:]]
    assert 'class="badge text-bg-warning">2<' in queue.content.decode()
    project = client.get("/projects/vision/")
    assert [r[2:] for r in rows(project)] == [department_row[2:], vision_row[2:]]
    # Speech's quota is speech's: charlie sees it, alice does not.
    client.force_login(charlie)
    assert [r[2:5] for r in rows(client.get("/projects/speech/"))] == [
        ["8", "12", "7"],
        ["2", "", "1"],
    ]


def test_a_project_without_quota_says_so(client, alice, vision):
    client.force_login(alice)
    page = client.get("/projects/vision/").content.decode()
    assert "Vision has no quota" in page
    assert 'data-testid="queue-quotas"' not in client.get("/queue/").content.decode()


@pytest.mark.usefixtures("busy")
def test_the_admin_sees_every_quota_and_the_cluster_queue_too(client, admin):
    client.force_login(admin)
    assert len(rows(client.get("/settings/quotas/"))) == 3
    assert len(rows(client.get("/queue/"))) == 3


@pytest.mark.usefixtures("busy")
def test_the_quota_pages_in_chinese(client, admin, alice):
    client.force_login(admin)
    client.cookies["django_language"] = "zh-hans"
    page = client.get("/settings/quotas/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "配额" in page and "保证" in page
    client.force_login(alice)
    queue = client.get("/queue/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "借用" in queue

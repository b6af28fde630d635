"""/usage/ (SPEC G4): who sees whose board-hours, the CSV, and bad choices in the address."""

import csv
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from tests.resources.factories import NodeFactory, ResourcePoolFactory, held


@pytest.fixture
def used(alice, bob, lead, charlie, vision, speech):
    """Yesterday, for three hours: alice 2 boards in vision's pool, bob 1 board in vision,
    charlie 4 boards in speech."""
    pool = ResourcePoolFactory(name="vision-reserved")
    node = NodeFactory()
    began = timezone.now() - timedelta(days=1)
    for owner, project, where, boards in [
        (alice, vision, pool, "2"), (bob, vision, None, "1"), (charlie, speech, None, "4"),
    ]:  # fmt: skip
        held(node, began, 3, boards, owner=owner, project=project, pool=where)
    return pool


def table(response) -> list[tuple[str, str]]:
    """(name, board-hours) of each row of the page's table."""
    html = response.content.decode()
    body = html.split('data-testid="usage-table"', 1)[1].split("</tbody>", 1)[0]
    rows = []
    for row in body.split("<tr>")[2:]:
        cells = [cell.split(">", 1)[1].split("<", 1)[0].strip() for cell in row.split("<td")[1:3]]
        rows.append(tuple(cells))
    return rows


@pytest.mark.django_db
@pytest.mark.usefixtures("used")
@pytest.mark.parametrize(
    ("who", "by", "rows"),
    [
        ("admin", "project", [("Speech", "12.0"), ("Vision", "9.0")]),
        ("alice", "project", [("Vision", "9.0")]),
        ("charlie", "project", [("Speech", "12.0")]),
        ("lead", "owner", [("alice", "6.0"), ("bob", "3.0")]),
        ("bob", "owner", [("bob", "3.0")]),
        ("alice", "pool", [("vision-reserved", "6.0"), ("Shared nodes", "3.0")]),
        ("admin", "owner", [("charlie", "12.0"), ("alice", "6.0"), ("bob", "3.0")]),
    ],
)
def test_each_sees_what_their_role_allows(client, actors, who, by, rows):
    client.force_login(next(user for user in actors.values() if user and user.username == who))
    response = client.get("/usage/", {"by": by, "days": 7, "unit": "day"})
    assert response.status_code == 200
    assert table(response) == rows


@pytest.mark.django_db
@pytest.mark.usefixtures("used")
def test_the_chart_and_shares_follow_the_measure_chosen(client, admin):
    client.force_login(admin)
    boards = client.get("/usage/", {"by": "project", "days": 7})
    cores = client.get("/usage/", {"by": "project", "days": 7, "measure": "cpu_hours"})
    # Speech held more boards (4 for 3 h), vision more cores (two allocations of one).
    assert table(boards) == [("Speech", "12.0"), ("Vision", "9.0")]
    assert table(cores) == [("Vision", "9.0"), ("Speech", "12.0")]
    assert "9.0 board-hours in all" not in cores.content.decode()
    assert "9.0 CPU core-hours in all" in cores.content.decode()
    assert "Share of CPU core-hours" in cores.content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("used")
def test_the_csv_has_a_line_per_day_and_holder(client, lead):
    client.force_login(lead)
    response = client.get("/usage/", {"by": "owner", "days": 30, "unit": "day", "export": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    assert "usage-30d-by-owner-per-day.csv" in response["Content-Disposition"]
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0] == ["day", "member", "board_hours", "cpu_hours", "memory_gib_hours"]
    per_member = {}
    for _day, name, *hours in lines[1:]:  # two days each when the three hours span midnight
        before = per_member.get(name, [0, 0, 0])
        per_member[name] = [a + Decimal(b) for a, b in zip(before, hours, strict=True)]
    # Each allocation also held a core and a GiB (the factory's) for its three hours.
    assert per_member == {"alice": [6, 3, 3], "bob": [3, 3, 3]}
    assert len(lines) - 1 in (2, 4)


@pytest.mark.django_db
@pytest.mark.usefixtures("used")
def test_choices_not_offered_are_said_and_the_defaults_shown(client, alice):
    client.force_login(alice)
    response = client.get(
        "/usage/", {"by": "password", "days": "9999", "unit": "week", "measure": "<b>"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("Not one of the choices: the default is shown.") == 3
    assert re.search(r'<option value="week"\s+selected', html)
    assert re.search(r'<option value="project"\s+selected', html)
    assert re.search(r'<option value="30"\s+selected', html)
    assert table(response) == [("Vision", "9.0")]  # by project over 30 days, the defaults


@pytest.mark.django_db
def test_nothing_used_says_so_in_chinese(client, charlie):
    client.force_login(charlie)
    response = client.get("/usage/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 200
    assert 'data-testid="usage-empty"' in response.content.decode()
    assert "用量" in response.content.decode()


@pytest.mark.django_db
def test_anonymous_is_sent_to_log_in(client):
    response = client.get("/usage/")
    assert response.status_code == 302 and "/login/" in response["Location"]

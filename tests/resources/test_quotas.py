"""The quota core (SPEC G1, resources/quotas.py): scopes, the department -> project tree's
rules, and where a quota stands, exhaustively on small cases and as properties."""

from __future__ import annotations

from decimal import Decimal
from itertools import product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resources.quotas import Held, Limit, Scope, Standing, misfits, standing

MODELS = (1, 2)
POOLS = (None, 10, 11)
SCOPES = [Scope(model, pool) for model, pool in product(MODELS, POOLS)]

boards = st.integers(0, 64).map(lambda eighths: Decimal(eighths) / 8)


@st.composite
def limits(draw):
    guaranteed = draw(boards)
    maximum = draw(st.none() | boards.map(lambda extra: guaranteed + extra))
    name = draw(st.sampled_from(("a", "b", "c")))
    return Limit(name, draw(st.sampled_from(SCOPES)), guaranteed, maximum)


held_rows = st.lists(
    st.builds(
        Held, st.sampled_from((1, 2, 3)), st.sampled_from(MODELS), st.sampled_from(POOLS), boards
    ),
    max_size=12,
)


@pytest.mark.parametrize(("parent", "child"), list(product(SCOPES, SCOPES)))
def test_a_scope_covers_the_same_model_on_every_node_or_in_its_own_pool(parent, child):
    expected = parent.model == child.model and (parent.pool is None or parent.pool == child.pool)
    assert parent.covers(child) is expected


def test_limits_refuse_what_no_quota_can_be():
    with pytest.raises(ValueError, match="negative"):
        Limit("a", Scope(1), Decimal(-1))
    with pytest.raises(ValueError, match="below the guarantee"):
        Limit("a", Scope(1), Decimal(4), Decimal(3))


def test_an_example_tree():
    department = Limit("research", Scope(1), Decimal(8), Decimal(12))
    in_pool = Limit("vision", Scope(1, 10), Decimal(5), Decimal(16))
    other_model = Limit("speech", Scope(2), Decimal(40))
    everywhere = Limit("speech", Scope(1), Decimal(4), None)
    found = misfits([department], [in_pool, other_model, everywhere])
    assert [(m.field, m.total, m.child) for m in found] == [
        ("guaranteed", Decimal(9), None),
        ("maximum", Decimal(16), in_pool),
    ]
    # A parent in one pool covers neither the model on every node nor another pool.
    assert (
        misfits([Limit("research", Scope(1, 11), Decimal(0), Decimal(0))], [in_pool, everywhere])
        == []
    )


@given(st.lists(limits(), max_size=4), st.lists(limits(), max_size=6))
def test_misfits_are_exactly_the_broken_rules(parents, children):
    found = misfits(parents, children)
    for parent in parents:
        covered = [child for child in children if parent.scope.covers(child.scope)]
        total = sum((child.guaranteed for child in covered), Decimal(0))
        guaranteed = [m for m in found if m.parent is parent and m.field == "guaranteed"]
        assert len(guaranteed) == (total > parent.guaranteed) * 1
        if guaranteed:
            assert guaranteed[0].total == total
        over = {
            id(child) for child in covered
            if parent.maximum is not None and child.maximum is not None
            and child.maximum > parent.maximum
        }  # fmt: skip
        assert {id(m.child) for m in found if m.parent is parent and m.field == "maximum"} == over


@given(st.lists(limits(), max_size=4), st.lists(limits(), max_size=6), limits())
def test_a_new_child_never_mends_a_broken_rule(parents, children, newcomer):
    def broken(found):
        return {(id(m.parent), m.field, id(m.child)) for m in found}

    assert broken(misfits(parents, children)) <= broken(misfits(parents, [*children, newcomer]))


@given(boards, st.none() | boards, boards, boards)
def test_a_standing_splits_use_into_within_and_borrowed(guaranteed, maximum, used, waiting):
    s = Standing(guaranteed, maximum, used, waiting)
    assert s.within + s.borrowed == used
    assert s.borrowed == max(Decimal(0), used - guaranteed)
    assert s.within <= guaranteed
    if maximum is None:
        assert s.room is None
    else:
        assert s.room == max(Decimal(0), maximum - used)


@given(st.sampled_from(SCOPES), held_rows, held_rows)
def test_a_department_stands_where_its_projects_together_stand(scope, held, waiting):
    projects = (1, 2)
    whole = standing(scope, Decimal(0), None, projects, held, waiting)
    parts = [standing(scope, Decimal(0), None, [p], held, waiting) for p in projects]
    assert whole.used == sum(part.used for part in parts)
    assert whole.waiting == sum(part.waiting for part in parts)
    # What no project of it holds, or another model, or another pool, is not counted.
    expected = sum(
        (row.boards for row in held
         if row.project in projects and scope.covers(Scope(row.model, row.pool))),
        Decimal(0),
    )  # fmt: skip
    assert whole.used == expected

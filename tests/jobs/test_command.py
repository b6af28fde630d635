"""SPEC J16: commands start with an executable; shell syntax is refused with a fix."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.validation.command import check_command, wrap

ACCEPTED = [
    'bash -c "KEY=V python3 a.py && python3 b.py"',
    "python3 train.py",
    "python /workspace/algorithm/train.py --epochs 5 --lr=0.1",
    "torchrun --nnodes ${WORLD_SIZE} --nproc_per_node ${SLOTS} train.py",
    "mpirun -np 16 \\\n -bind-to none -map-by slot \\\n python train.py",
    "deepspeed train.py --deepspeed --deepspeed_config ds_config.json",
    "python -c 'print(1); print(2)'",
    "sh -c 'a | b > c'",
]


@pytest.mark.parametrize("command", ACCEPTED)
def test_accepted(command):
    assert check_command(command) is None


@pytest.mark.parametrize(
    ("command", "code", "suggestion"),
    [
        ("KEY=VALUE python3 train.py", "assignment", 'bash -c "KEY=VALUE python3 train.py"'),
        (
            "python3 train.py && python3 evaluate.py",
            "operator",
            'bash -c "python3 train.py && python3 evaluate.py"',
        ),
        ("python a.py; python b.py", "operator", 'bash -c "python a.py; python b.py"'),
        ("python a.py || true", "operator", 'bash -c "python a.py || true"'),
        ("python a.py | tee log", "operator", 'bash -c "python a.py | tee log"'),
        ("python a.py > out.log", "operator", 'bash -c "python a.py > out.log"'),
        ("python a.py 2>&1", "operator", 'bash -c "python a.py 2>&1"'),
        ("python a.py\npython b.py", "newline", 'bash -c "python a.py && python b.py"'),
        ("python a.py &", "operator", 'bash -c "python a.py &"'),
    ],
)
def test_rejected_with_a_bash_c_suggestion(command, code, suggestion):
    problem = check_command(command)
    assert problem.code == code
    assert problem.suggestion == suggestion
    assert check_command(problem.suggestion) is None


@pytest.mark.parametrize(
    ("command", "code"), [("", "empty"), ("   ", "empty"), ('python "x', "quote")]
)
def test_empty_and_unclosed(command, code):
    assert check_command(command).code == code


def test_quotes_inside_are_escaped_in_the_suggestion():
    problem = check_command('X=1 python a.py --name "my run"')
    assert problem.suggestion == 'bash -c "X=1 python a.py --name \\"my run\\""'
    assert check_command(problem.suggestion) is None


@given(st.text(max_size=300))
def test_never_crashes(command):
    problem = check_command(command)
    assert problem is None or problem.code in {
        "empty",
        "too_long",
        "quote",
        "assignment",
        "operator",
        "newline",
    }


safe_words = st.text(
    alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="-_./="),
    min_size=1,
    max_size=12,
)


@given(st.lists(safe_words, min_size=1, max_size=6), st.sampled_from(("&&", "||", ";", "|")))
def test_any_joined_pair_is_refused_and_its_wrapping_accepted(words, operator):
    command = f"python3 {' '.join(words)} {operator} python3 evaluate.py"
    problem = check_command(command)
    assert problem is not None and problem.code == "operator"
    assert check_command(problem.suggestion) is None
    assert check_command(wrap(command)) is None


@given(st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}=[a-z0-9]{0,8}", fullmatch=True), safe_words)
def test_leading_assignment_is_refused(assignment, word):
    problem = check_command(f"{assignment} python3 {word}")
    assert problem is not None and problem.code == "assignment"

import pytest

from console.config import ConfigError
from resources.backends.local.backend import LocalBackend, parse_nodes


def test_parse_full_syntax():
    nodes = parse_nodes("a:8:32:4xA100, b:0.5:1.5, c:4:16:2xDemo-GPU/2")
    assert [(n.name, n.cpu_millicores, n.memory_mib) for n in nodes] == [
        ("a", 8000, 32768),
        ("b", 500, 1536),
        ("c", 4000, 16384),
    ]
    assert (nodes[0].board_count, nodes[0].accelerator_model, nodes[0].slices_per_board) == (
        4,
        "A100",
        1,
    )
    assert nodes[1].board_count == 0 and nodes[1].accelerator_kind == "CPU"
    assert nodes[2].slices_per_board == 2
    assert nodes[0].kernel


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a:8", "cannot read 'a:8'"),
        ("A:8:32", "cannot read"),
        ("a:8:32:4xA100/3", "cannot read"),
        ("a:8:32,a:4:16", "listed twice"),
        (" , ", "describes no node"),
    ],
)
def test_bad_text_names_the_variable(text, problem):
    with pytest.raises(ConfigError, match=problem) as caught:
        parse_nodes(text)
    assert caught.value.variable == "LOCAL_NODES"


def test_backend_reads_the_setting(settings):
    settings.LOCAL_NODES = "solo:2:4"
    assert [n.name for n in LocalBackend().inventory()] == ["solo"]
    assert LocalBackend().health() == ""

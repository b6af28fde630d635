"""The ``path_breaks`` filter: a path wraps between folders, and stays escaped."""

from django.template import Context, Template


def render(value) -> str:
    return Template("{% load paths %}{{ value|path_breaks }}").render(Context({"value": value}))


def test_a_break_opportunity_after_each_folder():
    assert render("/workspace/dataset/private/cifar10") == (
        "/<wbr>workspace/<wbr>dataset/<wbr>private/<wbr>cifar10"
    )


def test_what_it_shows_is_escaped():
    assert render("<b>/x") == "&lt;b&gt;/<wbr>x"
    assert render(None) == ""

"""An image's local runtime in the inventory's pages.

A filter rather than a property of ``Image``: models sit below the inventory's modules, so a
model never imports :mod:`resources.inventory.runtimes`."""

from django import template

from resources.inventory import runtimes

register = template.Library()


@register.filter
def local_runtime_problem(image) -> str | None:
    """Why this machine's nodes cannot run the image's jobs (or some of its modes), or None."""
    return runtimes.image_problem(image)

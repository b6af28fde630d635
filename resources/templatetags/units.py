"""Human units for the exact integers the inventory stores."""

from decimal import Decimal

from django import template

register = template.Library()


def _short(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@register.filter
def cores(millicores: int) -> str:
    """7500 -> "7.5"."""
    return _short((millicores or 0) / 1000)


@register.filter
def gib(mib: int) -> str:
    """32768 -> "32"."""
    return _short((mib or 0) / 1024)


@register.filter
def boards(value) -> str:
    """Decimal("0.500") -> "0.5", 4.0 -> "4"."""
    if isinstance(value, Decimal):
        return f"{value.normalize():f}"
    return _short(float(value or 0))

"""Filters of the catalog lists (the tabs are separate: see ``Kind.tab_filter``)."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from console.models import Project


def _projects(request):
    return Project.objects.for_user(request.user).only("id", "name")


class CatalogFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(
        method="search",
        label=_("Search"),
        widget=forms.TextInput(
            attrs={
                "type": "search",
                "class": "form-control form-control-sm",
                "placeholder": _("Name or description"),
            }
        ),
    )
    project = django_filters.ModelChoiceFilter(
        queryset=_projects,
        label=_("Project"),
        empty_label=_("Any project"),
        widget=forms.Select(attrs={"class": "form-select form-select-sm"}),
    )

    def search(self, queryset, name, value):
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))

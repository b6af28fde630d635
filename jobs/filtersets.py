"""Search of the job list (SPEC O1): name, status, creator, algorithm, spec, output path."""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from jobs.models import Job, JobType, Status
from resources.models import Algorithm, NodeSpec


class JobFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(label=_("Name"), lookup_expr="icontains")
    status = django_filters.ChoiceFilter(label=_("Status"), choices=Status.choices)
    creator = django_filters.CharFilter(
        label=_("Creator"), field_name="owner__username", lookup_expr="icontains"
    )
    my_algorithm = django_filters.ChoiceFilter(
        label=_("My algorithm"), method="filter_algorithm", empty_label=_("any")
    )
    favourite_algorithm = django_filters.ChoiceFilter(
        label=_("Favourite algorithm"), method="filter_algorithm", empty_label=_("any")
    )
    spec = django_filters.ChoiceFilter(label=_("Spec"), method="filter_spec", empty_label=_("any"))
    output_path = django_filters.CharFilter(label=_("Output path"), lookup_expr="icontains")
    job_type = django_filters.ChoiceFilter(
        label=_("Type"), choices=JobType.choices, widget=forms.HiddenInput
    )

    class Meta:
        model = Job
        fields: list[str] = []

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        # One query for both algorithm lists and one for the specs, whatever the page shows.
        mine, favourites = [], []
        for pk, name, owner_id, favourite in (
            Algorithm.objects.visible_to(user)
            .with_favourite(user)
            .filter(Q(owner=user) | Q(is_favourite=True))
            .values_list("pk", "name", "owner_id", "is_favourite")
            .order_by("name")
        ):
            if owner_id == user.pk:
                mine.append((pk, name))
            if favourite:
                favourites.append((pk, name))
        self.filters["my_algorithm"].extra["choices"] = mine
        self.filters["favourite_algorithm"].extra["choices"] = favourites
        self.filters["spec"].extra["choices"] = list(
            NodeSpec.objects.values_list("pk", "name").order_by("name")
        )

    def filter_algorithm(self, queryset, name, value):
        return queryset.filter(Q(algorithm_id=value) | Q(subtasks__algorithm_id=value)).distinct()

    def filter_spec(self, queryset, name, value):
        return queryset.filter(Q(spec_id=value) | Q(spec_choices__spec_id=value)).distinct()

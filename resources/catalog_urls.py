"""Addresses of the catalog pages (datasets, annotation sets, algorithms, models, volumes)."""

from django.urls import path, register_converter

from resources.catalog_kinds import KindConverter
from resources.views import catalog

register_converter(KindConverter, "catalog_kind")

app_name = "catalog"

urlpatterns = [
    path("", catalog.overview, name="overview"),
    path("<catalog_kind:kind>/", catalog.item_list, name="list"),
    path("<catalog_kind:kind>/new/", catalog.create, name="create"),
    path("<catalog_kind:kind>/<int:pk>/", catalog.detail, name="detail"),
    path("<catalog_kind:kind>/<int:pk>/edit/", catalog.edit, name="edit"),
    path("<catalog_kind:kind>/<int:pk>/delete/", catalog.delete, name="delete"),
    path("<catalog_kind:kind>/<int:pk>/versions/new/", catalog.add_version, name="add_version"),
    path("<catalog_kind:kind>/<int:pk>/favourite/", catalog.favourite, name="favourite"),
]

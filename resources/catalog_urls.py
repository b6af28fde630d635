"""Addresses of the catalog pages (datasets, annotation sets, algorithms, models, volumes)."""

urlpatterns: list = []

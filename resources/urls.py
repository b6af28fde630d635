"""Addresses of the resources app: /cluster/, the catalog's pages, and the platform settings
of inventory and faults."""

from django.urls import include, path, register_converter

from resources.catalog.kinds import KindConverter
from resources.views import catalog, cluster, cluster_settings, faults, inventory, quotas, usage

register_converter(KindConverter, "catalog_kind")

# The catalog's pages (datasets, annotation sets, algorithms, models, volumes), named
# "catalog:<name>".
catalog_patterns = [
    path("", catalog.overview, name="overview"),
    path("<catalog_kind:kind>/", catalog.item_list, name="list"),
    path("<catalog_kind:kind>/new/", catalog.create, name="create"),
    path("<catalog_kind:kind>/<int:pk>/", catalog.detail, name="detail"),
    path("<catalog_kind:kind>/<int:pk>/edit/", catalog.edit, name="edit"),
    path("<catalog_kind:kind>/<int:pk>/delete/", catalog.delete, name="delete"),
    path("<catalog_kind:kind>/<int:pk>/versions/new/", catalog.add_version, name="add_version"),
    path("<catalog_kind:kind>/<int:pk>/favourite/", catalog.favourite, name="favourite"),
]

urlpatterns = [
    path("cluster/", cluster.cluster, name="cluster"),
    path("usage/", usage.usage, name="usage"),
    path("cluster/nodes/<int:pk>/return/", faults.node_return, name="cluster_node_return"),
    path("settings/faults/", faults.fault_page, name="settings_faults"),
    path("settings/faults/<int:pk>/clear/", faults.fault_clear, name="settings_fault_clear"),
    path("settings/quotas/", quotas.quota_settings, name="quota_settings"),
    path("settings/quotas/new/", quotas.quota_edit, name="quota_new"),
    path("settings/quotas/<int:pk>/", quotas.quota_edit, name="quota_edit"),
    path("settings/quotas/<int:pk>/delete/", quotas.quota_delete, name="quota_delete"),
    path("settings/departments/new/", quotas.department_edit, name="department_new"),
    path("settings/departments/<int:pk>/", quotas.department_edit, name="department_edit"),
    path(
        "settings/departments/<int:pk>/delete/",
        quotas.department_delete,
        name="department_delete",
    ),
    path("catalog/", include((catalog_patterns, "catalog"))),
    path("settings/inventory/<slug:kind>/", inventory.inventory_list, name="inventory_list"),
    path("settings/inventory/<slug:kind>/new/", inventory.inventory_edit, name="inventory_new"),
    path(
        "settings/inventory/<slug:kind>/<int:pk>/",
        inventory.inventory_edit,
        name="inventory_edit",
    ),
    path(
        "settings/inventory/<slug:kind>/<int:pk>/retire/",
        inventory.inventory_retire,
        name="inventory_retire",
    ),
    path(
        "settings/inventory/clusters/<int:pk>/test/",
        cluster_settings.cluster_test,
        {"kind": "clusters"},
        name="cluster_test",
    ),
    path(
        "settings/inventory/clusters/<int:pk>/sync/",
        cluster_settings.cluster_sync,
        {"kind": "clusters"},
        name="cluster_sync",
    ),
]

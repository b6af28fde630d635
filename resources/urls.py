from django.urls import include, path

from resources.views import cluster, cluster_settings, faults, inventory

urlpatterns = [
    path("cluster/", cluster.cluster, name="cluster"),
    path("cluster/nodes/<int:pk>/return/", faults.node_return, name="cluster_node_return"),
    path("settings/faults/", faults.fault_page, name="settings_faults"),
    path("settings/faults/<int:pk>/clear/", faults.fault_clear, name="settings_fault_clear"),
    path("catalog/", include("resources.catalog_urls")),
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

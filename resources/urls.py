from django.urls import include, path

from resources.views import cluster, cluster_settings, inventory

urlpatterns = [
    path("cluster/", cluster.cluster, name="cluster"),
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

"""The Django admin's view of the resources app: look things up, change nothing.

Inventory changes through /settings/inventory/ (which checks a node's pool and cordon
against what sync owns, refuses to retire what live jobs use, and seals a cluster's
credentials), faults through /settings/faults/, allocations only through admission and
the runs that release them. So here every model is read-only, listed with what an
operator searches for: which workload holds which node, what was injected where.
"""

from django.contrib import admin

from console.admin import ReadOnlyAdmin
from resources.models import Allocation, Cluster, Image, Node, NodeFault, NodeSpec, ResourcePool


@admin.register(Node)
class NodeAdmin(ReadOnlyAdmin):
    list_display = [
        "name", "status", "cordoned", "pool", "cluster", "accelerator_model", "board_count",
        "last_heartbeat", "retired_at",
    ]  # fmt: skip
    list_filter = ["status", "cordoned", "source", "pool", "cluster"]
    list_select_related = ["pool", "cluster", "accelerator_model"]
    search_fields = ["name"]


@admin.register(NodeSpec)
class NodeSpecAdmin(ReadOnlyAdmin):
    list_display = ["name", "cpu_millicores", "memory_mib", "boards", "accelerator_model"]
    list_select_related = ["accelerator_model"]
    search_fields = ["name"]


@admin.register(ResourcePool)
class ResourcePoolAdmin(ReadOnlyAdmin):
    list_display = ["name", "description", "retired_at"]
    search_fields = ["name"]


@admin.register(Image)
class ImageAdmin(ReadOnlyAdmin):
    list_display = ["name", "reference", "local_runtime", "retired_at"]
    search_fields = ["name", "reference"]


@admin.register(Cluster)
class ClusterAdmin(ReadOnlyAdmin):
    list_display = ["name", "connection", "api_url", "namespace", "queue", "updated_at"]
    search_fields = ["name", "api_url", "namespace"]
    # Sealed credentials never leave the model, not even as ciphertext.
    exclude = ["sealed_token", "sealed_kubeconfig"]


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    list_display = [
        "label", "replica", "holder_kind", "holder_id", "node", "cpu_millicores", "memory_mib",
        "slots", "created_at", "released_at",
    ]  # fmt: skip
    list_filter = ["holder_kind"]
    list_select_related = ["node"]
    search_fields = ["label", "replica", "node__name"]


@admin.register(NodeFault)
class NodeFaultAdmin(ReadOnlyAdmin):
    list_display = ["node", "kind", "detail", "created_at", "created_by", "cleared_at", "effect"]
    list_filter = ["kind"]
    list_select_related = ["node", "created_by"]
    search_fields = ["node__name"]

from resources.models.allocations import Allocation, UsageDigest
from resources.models.catalog import (
    Algorithm,
    AnnotationSet,
    AnnotationVersion,
    Dataset,
    DatasetVersion,
    ModelVersion,
    TrainedModel,
    Volume,
)
from resources.models.clusters import Cluster
from resources.models.faults import FaultKind, NodeFault
from resources.models.inventory import (
    AcceleratorModel,
    DriverVersion,
    Image,
    Node,
    NodeSpec,
    ResourcePool,
    VendorKind,
)
from resources.models.quotas import Quota, QuotaChange

__all__ = [
    "AcceleratorModel",
    "Algorithm",
    "Allocation",
    "AnnotationSet",
    "AnnotationVersion",
    "Cluster",
    "Dataset",
    "DatasetVersion",
    "DriverVersion",
    "FaultKind",
    "Image",
    "ModelVersion",
    "Node",
    "NodeFault",
    "NodeSpec",
    "Quota",
    "QuotaChange",
    "ResourcePool",
    "TrainedModel",
    "UsageDigest",
    "VendorKind",
    "Volume",
]

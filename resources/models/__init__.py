from resources.models.allocations import Allocation
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
from resources.models.inventory import (
    AcceleratorModel,
    DriverVersion,
    Image,
    Node,
    NodeSpec,
    ResourcePool,
    VendorKind,
)

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
    "Image",
    "ModelVersion",
    "Node",
    "NodeSpec",
    "ResourcePool",
    "TrainedModel",
    "VendorKind",
    "Volume",
]

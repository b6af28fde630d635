"""Kubernetes clusters the console runs jobs on (SPEC E2), kept by platform admins.

A cluster's nodes come into the inventory by its sync; jobs admitted onto them run there as
Volcano Jobs. Credentials (a bearer token, or a whole kubeconfig) are sealed at rest
(console.sealed) and never shown back: a form only says whether one is stored.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from console import sealed
from resources.models.inventory import Retirable


class Cluster(Retirable):
    class Connection(models.TextChoices):
        TOKEN = "token", _("API address, CA certificate and token")
        KUBECONFIG = "kubeconfig", _("A kubeconfig and one of its contexts")
        IN_CLUSTER = "in_cluster", _("In-cluster (the console runs in this cluster)")

    name = models.CharField(_("name"), max_length=63, unique=True)
    description = models.CharField(_("description"), max_length=200, blank=True)
    connection = models.CharField(
        _("connection"), max_length=12, choices=Connection, default=Connection.TOKEN
    )
    api_url = models.CharField(
        _("API address"), max_length=255, blank=True,
        help_text=_("e.g. https://k8s.example.com:6443"),
    )  # fmt: skip
    ca_certificate = models.TextField(
        _("CA certificate"), blank=True,
        help_text=_("PEM. Blank: the machine's trusted authorities."),
    )  # fmt: skip
    sealed_token = models.TextField(blank=True, editable=False)
    sealed_kubeconfig = models.TextField(blank=True, editable=False)
    context = models.CharField(
        _("context"), max_length=253, blank=True,
        help_text=_("Blank: the kubeconfig's current context."),
    )  # fmt: skip
    namespace = models.CharField(
        _("namespace"), max_length=63, default="default",
        help_text=_("Jobs' objects are created here."),
    )  # fmt: skip
    queue = models.CharField(
        _("Volcano queue"), max_length=63, default="default",
        help_text=_("The Volcano queue jobs are submitted to."),
    )  # fmt: skip
    accelerator_resource = models.CharField(
        _("accelerator resource"), max_length=253, default="nvidia.com/gpu",
        help_text=_("The extended resource a board is requested as."),
    )  # fmt: skip
    storage_claim = models.CharField(
        _("storage claim"), max_length=253, blank=True,
        help_text=_("A PersistentVolumeClaim in the namespace holding the console's storage."),
    )  # fmt: skip
    storage_host_path = models.CharField(
        _("storage host folder"), max_length=500, blank=True,
        help_text=_("Or: the folder where every node mounts the console's storage."),
    )  # fmt: skip
    default_pool = models.ForeignKey(
        "resources.ResourcePool", verbose_name=_("pool of its nodes"), null=True, blank=True,
        on_delete=models.PROTECT, related_name="clusters",
        help_text=_(
            "Nodes without a pool label go into this pool. Blank: they are shared nodes."
        ),
    )  # fmt: skip
    prometheus_url = models.CharField(
        _("Prometheus address"), max_length=255, blank=True,
        help_text=_("Optional: where DCGM exporter GPU metrics can be queried."),
    )  # fmt: skip
    updated_at = models.DateTimeField(auto_now=True)
    # The quotas mirrored as Volcano queues (resources.queue_mirror): the queues' names as
    # the last mirror left them, when, and why the last one failed ("" when it did not).
    mirrored_queues = models.JSONField(default=list, blank=True, editable=False)
    queues_mirrored_at = models.DateTimeField(null=True, blank=True, editable=False)
    queues_problem = models.CharField(max_length=500, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")

    def __str__(self) -> str:
        return self.name

    # Credentials: write-only from the outside.
    def set_token(self, token: str) -> None:
        self.sealed_token = sealed.seal(token)

    def set_kubeconfig(self, text: str) -> None:
        self.sealed_kubeconfig = sealed.seal(text)

    def token(self) -> str:
        return sealed.unseal(self.sealed_token)

    def kubeconfig(self) -> str:
        return sealed.unseal(self.sealed_kubeconfig)

    @property
    def has_token(self) -> bool:
        return bool(self.sealed_token)

    @property
    def has_kubeconfig(self) -> bool:
        return bool(self.sealed_kubeconfig)

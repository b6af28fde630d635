"""Forms of the inventory settings pages (platform admins only)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from django import forms
from django.utils.translation import gettext_lazy as _

from console import limits, names
from console.models import Project
from console.widgets import word_empty_choices
from resources.inventory import runtimes
from resources.models import (
    AcceleratorModel,
    DriverVersion,
    Image,
    Node,
    NodeSpec,
    ResourcePool,
    VendorKind,
)

CHECKBOXES = forms.CheckboxSelectMultiple(attrs={"class": "form-check-input"})


class NameRules:
    """Each name field checked by the rule for what that name becomes (console/names.py)."""

    name_rules: dict[str, names.NameRule] = {}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, rule in self.name_rules.items():
            rule.apply(self.fields[name])
        word_empty_choices(self)


class AcceleratorModelForm(NameRules, forms.ModelForm):
    # Matched against the model a node's labels report.
    name_rules = {"name": names.LABEL_VALUE}

    class Meta:
        model = AcceleratorModel
        fields = ["name", "kind", "memory_gib"]


class DriverVersionForm(NameRules, forms.ModelForm):
    # Matched against the driver version a node's labels report.
    name_rules = {"version": names.LABEL_VALUE}

    class Meta:
        model = DriverVersion
        fields = ["kind", "version"]


class CapacityFields(NameRules, forms.ModelForm):
    """CPU in cores and memory in GiB on the form; millicores and MiB in the database."""

    cpu = forms.DecimalField(
        label=_("CPU cores"), min_value=Decimal("0.001"), max_digits=8, decimal_places=3
    )
    memory_gib = forms.DecimalField(
        label=_("Memory (GiB)"), min_value=Decimal("0.001"), max_digits=9, decimal_places=3
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial.setdefault("cpu", Decimal(self.instance.cpu_millicores) / 1000)
            self.initial.setdefault("memory_gib", Decimal(self.instance.memory_mib) / 1024)
        if "accelerator_model" in self.fields:
            self.fields["accelerator_model"].queryset = AcceleratorModel.objects.live().exclude(
                kind=VendorKind.CPU
            )

    def clean(self):
        data = super().clean()
        if data.get("cpu") is not None:
            self.instance.cpu_millicores = int(data["cpu"] * 1000)
        if data.get("memory_gib") is not None:
            self.instance.memory_mib = int(data["memory_gib"] * 1024)
        return data


class NodeSpecForm(CapacityFields):
    name_rules = {"name": names.LABEL_VALUE}

    class Meta:
        model = NodeSpec
        fields = ["name", "cpu", "memory_gib", "accelerator_model", "boards", "description"]
        help_texts = {
            "boards": _("Whole boards, or a virtual slice of one: 0.5, 0.25 or 0.125."),
        }


class NodeForm(CapacityFields):
    """A node entered by hand (the backends' nodes are edited with NodeSettingsForm)."""

    name_rules = {"name": names.NODE_NAME}

    class Meta:
        model = Node
        fields = [
            "name", "cpu", "memory_gib", "accelerator_model", "board_count", "slices_per_board",
            "driver_version", "os_image", "kernel", "pool", "cordoned",
        ]  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["driver_version"].queryset = DriverVersion.objects.live()
        self.fields["pool"].queryset = ResourcePool.objects.live()


class NodeSettingsForm(forms.ModelForm):
    """What the console decides about a node a backend reports."""

    class Meta:
        model = Node
        fields = ["pool", "cordoned"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = ResourcePool.objects.live()
        word_empty_choices(self)


class ResourcePoolForm(NameRules, forms.ModelForm):
    # The value of the pool label (KUBERNETES_POOL_LABEL) on the pool's nodes.
    name_rules = {"name": names.LABEL_VALUE}
    projects = forms.ModelMultipleChoiceField(
        label=_("Projects allowed"), queryset=Project.objects.all(), required=False,
        widget=CHECKBOXES,
    )  # fmt: skip

    class Meta:
        model = ResourcePool
        fields = [
            "name", "description", "projects",
            "precheck_root_gb", "precheck_shm_gb", "precheck_cache_gb",
        ]  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The site's value is what an empty field means: say it, so nobody types it again.
        site = limits.current()
        for name in ("precheck_root_gb", "precheck_shm_gb", "precheck_cache_gb"):
            self.fields[name].help_text = _("Empty: the site's limit (%(n)s GB).") % {
                "n": getattr(site, name)
            }


class ImageForm(NameRules, forms.ModelForm):
    name_rules = {"name": names.LABEL_VALUE, "reference": names.IMAGE_REFERENCE}
    scopes = forms.MultipleChoiceField(
        label=_("Scopes"), choices=Image.Scope.choices, widget=CHECKBOXES
    )
    board_kinds = forms.MultipleChoiceField(
        label=_("Board types"), choices=VendorKind.choices, widget=CHECKBOXES
    )

    class Meta:
        model = Image
        fields = ["name", "reference", "scopes", "board_kinds", "description", "local_runtime"]

    def clean_local_runtime(self) -> str:
        value = self.cleaned_data["local_runtime"]
        problem = runtimes.folder_problem(value)
        if problem:
            raise forms.ValidationError(problem, code="runtime")
        # One spelling per folder: no trailing slash, no "a//b".
        return str(Path(value)) if value else ""

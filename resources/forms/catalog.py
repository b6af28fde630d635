"""Forms of the catalog: an item of any kind, and a version of one."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.validators import MinValueValidator
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, ngettext_lazy

from console import limits, names
from console.models import Project
from console.modes import MAX_NODES, Mode
from console.sharing import Access
from console.validation.command import check_command
from console.validation.messages import describe
from resources.catalog import storage
from resources.catalog.kinds import Kind
from resources.catalog.mounts import (
    FOLDER_NAME,
    FOLDER_NAME_MAX,
    UnsafePath,
    clean_storage_path,
    is_folder_name,
    storage_source,
)
from resources.models import Algorithm, Image, TrainedModel

PATH_ERRORS = {
    "empty": _("Enter a folder under the storage root, e.g. “users/<you>/datasets/cifar10”."),
    "absolute": _("Use a path relative to the storage root: no leading “/” or “~”."),
    "parent": _("“..” is not allowed: the path must stay under the storage root."),
    "outside": _("This path leads outside the storage root (through a symbolic link)."),
    "loop": _("This path goes round a loop of symbolic links."),
    "invalid": _("Backslashes and control characters are not allowed in a path."),
}
PATH_MAX = 500  # the model fields' length
# Item and version names become folder names in jobs (resources/catalog/mounts.py).
FOLDER = names.NameRule(
    FOLDER_NAME,
    FOLDER_NAME_MAX,
    ngettext_lazy(
        "Up to %(max)d character: letters, digits, “-”, “_” and “.”, not beginning with “.” "
        "(no spaces or “/”): it becomes a folder name in jobs.",
        "Up to %(max)d characters: letters, digits, “-”, “_” and “.”, not beginning with “.” "
        "(no spaces or “/”): it becomes a folder name in jobs.",
        "max",
    ),
)


def _clean_path(value: str, user) -> str:
    """The canonical relative path, or a field error saying what is wrong with it. A folder
    registered in the catalog opens it to others as the item's sharing says, so ``user`` must
    be allowed to write there (see resources.catalog.storage)."""
    try:
        path = clean_storage_path(value)
        storage_source(path)
    except UnsafePath as exc:
        raise forms.ValidationError(PATH_ERRORS[exc.code], code=exc.code) from None
    if len(path) > PATH_MAX:
        raise forms.ValidationError(
            ngettext(
                "At most %(max)d character, please.",
                "At most %(max)d characters, please.",
                PATH_MAX,
            ),
            params={"max": PATH_MAX},
            code="max_length",
        )
    try:
        storage.check_writable(user, path)
    except storage.NotYours as error:
        raise forms.ValidationError(storage.refusal(user, error), code="not_yours") from None
    return path


def _clean_name(value: str) -> str:
    name = value.strip()
    if not is_folder_name(name):
        raise forms.ValidationError(FOLDER.problem(name), code="invalid")
    return name


class BootstrapMixin:
    """Bootstrap classes on every widget, ``is-invalid`` on those whose field failed, and
    the groups of fields the form page shows."""

    def style_widgets(self) -> None:
        for field in self.fields.values():
            widget = field.widget
            if isinstance(widget, forms.RadioSelect | forms.CheckboxInput):
                css = "form-check-input"
            elif isinstance(widget, forms.Select):
                css = "form-select"
            else:
                css = "form-control"
            widget.attrs["class"] = css

    def field_groups(self) -> list[tuple[str, str, list]]:
        """(heading, intro, bound fields) in the order the form page shows them."""
        return [("", "", self.visible_fields())]

    def full_clean(self) -> None:
        super().full_clean()
        for name in self.errors:
            if name in self.fields:
                widget = self.fields[name].widget
                widget.attrs["class"] = f"{widget.attrs.get('class', '')} is-invalid".strip()


class CatalogItemForm(BootstrapMixin, forms.ModelForm):
    """Create or edit an item; ``owner`` is who owns it (the creator, or the item's owner)."""

    class Meta:
        fields = ["name", "description", "project", "others_access", "path"]
        widgets = {
            "others_access": forms.RadioSelect,
            "description": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args, kind: Kind, user, owner, **kwargs):
        super().__init__(*args, **kwargs)
        self.kind, self.user, self.owner = kind, user, owner
        self.fields["name"].help_text = _(
            "Letters, digits, “-”, “_” and “.”; unique among your %(kinds)s. "
            "It becomes a folder name in the job."
        ) % {"kinds": kind.title.lower()}
        FOLDER.apply(self.fields["name"])
        self._setup_project()
        self._setup_access()
        path = self.fields["path"]
        path.help_text = _("Relative to the storage root %(root)s.") % {
            "root": settings.STORAGE_ROOT
        }
        path.widget.attrs.update(
            placeholder=f"{storage.personal_folder(owner)}/{kind.slug}/my-{kind.model._meta.model_name}",
            spellcheck="false",
        )
        if "kind" in self.fields and not user.is_staff:
            # Pretrained models are the platform's own: only admins publish them.
            del self.fields["kind"]
        if "size_gib" in self.fields:
            size = self.fields["size_gib"]
            size.validators.append(MinValueValidator(1))
            size.widget.attrs["min"] = 1
        if "suggested_image" in self.fields:
            self._setup_launch()
        self.style_widgets()

    def _setup_launch(self) -> None:
        """An algorithm's suggested launch: training images, the job's modes, none needed."""
        image = self.fields["suggested_image"]
        offered = Q(pk__in=Image.objects.for_training().values("pk"))
        if self.instance.suggested_image_id:
            # Keep its image on offer even if retired since: the owner decides what replaces it.
            offered |= Q(pk=self.instance.suggested_image_id)
        image.queryset = Image.objects.filter(offered)
        image.empty_label = _("— none —")
        self.fields["suggested_mode"].choices = [("", _("— none —")), *Mode.choices]
        self.fields["suggested_nodes"].widget.attrs.update(min=1, max=MAX_NODES)
        self.fields["suggested_command"].widget.attrs.update(rows=2, spellcheck="false")

    def field_groups(self) -> list[tuple[str, str, list]]:
        """(heading, intro, bound fields): the item's own, then an algorithm's suggested launch."""
        launch = set(Algorithm.SUGGESTION_FIELDS)
        fields = self.visible_fields()
        groups = [("", "", [field for field in fields if field.name not in launch])]
        suggested = [field for field in fields if field.name in launch]
        if suggested:
            intro = _(
                "Optional. When someone picks this algorithm, the job form shows these and "
                "fills them in on request, so that their first job starts as it should."
            )
            groups.append((_("Suggested launch"), intro, suggested))
        return groups

    def _setup_project(self) -> None:
        field = self.fields["project"]
        choices = Q(pk__in=Project.objects.for_user(self.user).values("pk"))
        if self.instance.project_id:
            # Keep the item's project on offer even if its owner has left it since.
            choices |= Q(pk=self.instance.project_id)
        field.queryset = Project.objects.filter(choices)
        field.required = not self.user.is_staff
        field.empty_label = _("Platform-wide (every user)") if self.user.is_staff else None
        field.help_text = _("Members of this project may use it, as “Others' access” allows.")

    def _setup_access(self) -> None:
        field = self.fields["others_access"]
        field.help_text = _(
            "What the other members of the project may do with it. Only you and platform "
            "admins may edit or delete it."
        )
        if not limits.current().sharing_enabled:
            field.choices = [(Access.NONE, Access.NONE.label)]
            field.help_text = _("An admin has turned sharing off: only “None” can be chosen.")
            if not self.is_bound:
                self.initial["others_access"] = Access.NONE

    def clean_name(self) -> str:
        name = _clean_name(self.cleaned_data["name"])
        taken = self.kind.model.objects.filter(owner=self.owner, name__iexact=name)
        if taken.exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(
                _("%(owner)s already has a %(kind)s named “%(name)s”."),
                params={"owner": self.owner.get_username(), "kind": self.kind.singular,
                        "name": name},
                code="unique",
            )  # fmt: skip
        return name

    def clean_path(self) -> str:
        return _clean_path(self.cleaned_data["path"], self.user)

    def clean_suggested_command(self) -> str:
        """The job form's own rule (SPEC J16): a suggestion the form would refuse helps
        nobody, so it is refused here, with the same words and the same fix."""
        command = self.cleaned_data["suggested_command"].strip()
        problem = check_command(command) if command else None
        if problem:
            raise forms.ValidationError(describe(problem), code=problem.code)
        return command

    def save(self, commit: bool = True):
        item = super().save(commit=False)
        if not item.pk:
            item.owner = self.owner
        if isinstance(item, TrainedModel) and "kind" not in self.fields and not item.pk:
            item.kind = TrainedModel.Kind.PRIVATE
        if commit:
            item.save()
            self.save_m2m()
        return item


def item_form_class(kind: Kind) -> type[CatalogItemForm]:
    return forms.modelform_factory(
        kind.model,
        form=CatalogItemForm,
        fields=[*CatalogItemForm.Meta.fields, *kind.extra_fields],
        widgets=CatalogItemForm.Meta.widgets,
    )


class VersionForm(BootstrapMixin, forms.ModelForm):
    """A new version of a dataset, annotation dataset or model."""

    path = forms.CharField(
        label=_("storage path"), max_length=500, required=False, strip=True,
    )  # fmt: skip

    class Meta:
        fields = ["name", "path"]

    def __init__(self, *args, kind: Kind, item, **kwargs):
        super().__init__(*args, **kwargs)
        self.kind, self.item = kind, item
        setattr(self.instance, kind.version_parent, item)
        self.fields["name"].help_text = _(
            "For example “v2”: letters, digits, “-”, “_” and “.”. Jobs mounting others' "
            "items see it as a folder name."
        )
        FOLDER.apply(self.fields["name"])
        self.fields["path"].help_text = _(
            "Relative to the storage root. Leave empty for a folder named after the version "
            "inside the item's folder (%(path)s/…)."
        ) % {"path": item.path}
        self.fields["path"].widget.attrs.update(placeholder=f"{item.path}/v…", spellcheck="false")
        self.style_widgets()

    def clean_name(self) -> str:
        name = _clean_name(self.cleaned_data["name"])
        if self.item.versions.filter(name__iexact=name).exists():
            raise forms.ValidationError(
                _("This %(kind)s already has a version “%(name)s”."),
                params={"kind": self.kind.singular, "name": name},
                code="unique",
            )
        return name

    def clean(self):
        cleaned = super().clean()
        typed, name = cleaned.get("path"), cleaned.get("name")
        # Without a name there is no default folder to offer, and the name's error suffices.
        if typed or name:
            try:
                cleaned["path"] = _clean_path(typed or f"{self.item.path}/{name}", self.item.owner)
            except forms.ValidationError as error:
                self.add_error("path", error)
        return cleaned


def version_form_class(kind: Kind) -> type[VersionForm]:
    return forms.modelform_factory(kind.version_model, form=VersionForm, fields=["name", "path"])

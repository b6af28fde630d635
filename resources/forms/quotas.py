"""The quota settings' forms (SPEC G1): a quota, and a department with its projects.

Both refuse what would break the department -> project tree (:mod:`resources.quotas`),
on the field that would break it, saying which quota it would break and by how much.
"""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.core.validators import MinValueValidator
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from console.celery import send
from console.models import Department, Project
from console.widgets import word_empty_choices
from resources.models import AcceleratorModel, Quota, QuotaChange, ResourcePool
from resources.quota_standing import children_limits, department_limits
from resources.quotas import Limit, Misfit, Scope, misfits

CHECKBOXES = forms.CheckboxSelectMultiple(attrs={"class": "form-check-input"})
BOARD_STEP = Decimal("0.125")  # the smallest slice of a board (SPEC J11)


def boards(value: Decimal | None) -> str:
    """A number of boards as people write it: 4, 0.5, never 4.000."""
    if value is None:
        return ""
    return format(value.normalize(), "f") if value else "0"


def audited(quota: Quota | None) -> dict | None:
    if quota is None:
        return None
    values = {"guaranteed": boards(quota.guaranteed), "maximum": boards(quota.maximum) or None}
    if quota.weight != 1:  # the usual weight is not worth a line of every change
        values["weight"] = quota.weight
    return values


def record(holder, scope: str, old, new, user) -> None:
    QuotaChange.objects.create(
        holder=str(holder)[:120], scope=scope[:140], old_value=old, new_value=new, changed_by=user
    )
    # The clusters' Volcano queues follow (resources.queue_mirror).
    transaction.on_commit(lambda: send("resources.tasks.mirror_queues"))


class QuotaForm(forms.ModelForm):
    holder = forms.ChoiceField(label=_("For"))

    class Meta:
        model = Quota
        fields = ["accelerator_model", "pool", "guaranteed", "maximum", "weight"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["weight"].required = False  # empty: the usual 1
        departments = [(f"d{d.pk}", d.name) for d in Department.objects.all()]
        projects = [
            (f"p{p.pk}", f"{p.name} ({p.department.name})" if p.department_id else p.name)
            for p in Project.objects.select_related("department")
        ]
        self.fields["holder"].choices = [
            ("", "---------"),
            *([(_("Departments"), departments)] if departments else []),
            (_("Projects"), projects),
        ]
        self.fields["holder"].help_text = _(
            "A department's guarantee is shared out among its projects; its maximum caps "
            "them all together."
        )
        self.order_fields(["holder", *self.Meta.fields])
        if self.instance.pk:
            quota = self.instance
            self.initial["holder"] = (
                f"d{quota.department_id}" if quota.department_id else f"p{quota.project_id}"
            )
        self.fields["accelerator_model"].queryset = AcceleratorModel.objects.live()
        self.fields["pool"].queryset = ResourcePool.objects.live()
        for name in ("guaranteed", "maximum"):
            self.fields[name].validators.append(MinValueValidator(0))
            self.fields[name].widget.attrs.update(step=str(BOARD_STEP), min="0")
        self.old = audited(Quota.objects.filter(pk=quota.pk).first()) if self.instance.pk else None
        word_empty_choices(self)
        self.fields["pool"].empty_label = _("All nodes")
        for name in ("guaranteed", "maximum"):
            if isinstance(self.initial.get(name), Decimal):  # 4, not 4.000
                self.initial[name] = boards(self.initial[name])

    def clean_holder(self):
        value = self.cleaned_data["holder"]
        try:
            if value.startswith("d"):
                return Department.objects.get(pk=int(value[1:]))
            return Project.objects.select_related("department").get(pk=int(value[1:]))
        except (ValueError, Department.DoesNotExist, Project.DoesNotExist):
            raise forms.ValidationError(
                _("Pick a department or a project."), code="invalid"
            ) from None

    def _clean_boards(self, name: str):
        value = self.cleaned_data.get(name)
        if value is not None and value % BOARD_STEP:
            raise forms.ValidationError(
                _("Boards come in whole boards or slices of 1/8: 0.125, 0.5, 2…"), code="step"
            )
        return value

    def clean_guaranteed(self):
        return self._clean_boards("guaranteed")

    def clean_weight(self):
        return self.cleaned_data.get("weight") or 1

    def clean_maximum(self):
        return self._clean_boards("maximum")

    def clean(self):
        data = super().clean()
        holder, model = data.get("holder"), data.get("accelerator_model")
        guaranteed, maximum = data.get("guaranteed"), data.get("maximum")
        if holder is None or model is None or guaranteed is None:
            return data
        if maximum is not None and maximum < guaranteed:
            self.add_error("maximum", _("A maximum below the guarantee could never be met."))
            return data
        quota = self.instance
        quota.project = holder if isinstance(holder, Project) else None
        quota.department = holder if isinstance(holder, Department) else None
        pool = data.get("pool")
        same = Quota.objects.filter(accelerator_model=model, pool=pool).exclude(pk=quota.pk)
        if same.filter(project=quota.project, department=quota.department).exists():
            self.add_error(
                "accelerator_model",
                _("%(holder)s already has a quota for this model there: edit that one.")
                % {"holder": holder},
            )
            return data
        mine = Limit(str(holder), limit_of_scope(model, pool), guaranteed, maximum)
        if isinstance(holder, Department):
            found = misfits([mine], children_limits(holder))
        elif holder.department_id:
            department = holder.department
            children = [*children_limits(department, but=quota), mine]
            found = [
                misfit
                for misfit in misfits(department_limits(department), children)
                if misfit.child in (None, mine)
            ]
        else:
            found = []
        for misfit in found:
            self.add_error(misfit.field, self._say(misfit, holder))
        return data

    def _say(self, misfit: Misfit, holder) -> str:
        parent = misfit.parent
        values = {
            "department": parent.holder, "total": boards(misfit.total),
            "guaranteed": boards(parent.guaranteed), "maximum": boards(parent.maximum),
            "child": misfit.child.holder if misfit.child else "",
        }  # fmt: skip
        if isinstance(holder, Department) and misfit.field == "guaranteed":
            return (
                _(
                    "Its projects' guarantees for this model add up to %(total)s: the department's "
                    "must be at least that."
                )
                % values
            )
        if isinstance(holder, Department):
            return (
                _(
                    "The maximum of %(child)s is %(total)s: the department's cannot be lower. "
                    "Lower the project's first."
                )
                % values
            )
        if misfit.field == "guaranteed":
            return (
                _(
                    "The guarantee of %(department)s for this model is %(guaranteed)s; its "
                    "projects' guarantees would add up to %(total)s."
                )
                % values
            )
        return _("Above the maximum of %(department)s for this model, %(maximum)s.") % values

    @transaction.atomic
    def save(self, user=None, commit=True):
        quota = super().save(commit=commit)
        record(quota.holder, quota.scope, self.old, audited(quota), user)
        return quota


def limit_of_scope(model: AcceleratorModel, pool: ResourcePool | None) -> Scope:
    return Scope(model.pk, pool.pk if pool else None)


@transaction.atomic
def delete_quota(quota: Quota, user) -> None:
    record(quota.holder, quota.scope, audited(quota), None, user)
    quota.delete()


class DepartmentForm(forms.ModelForm):
    projects = forms.ModelMultipleChoiceField(
        label=_("Projects"), queryset=Project.objects.all(), required=False, widget=CHECKBOXES,
        help_text=_("A project is in one department at most: ticking it here moves it."),
    )  # fmt: skip

    class Meta:
        model = Department
        fields = ["name", "slug", "description", "projects"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        projects = Project.objects.select_related("department")
        self.fields["projects"].queryset = projects
        self.fields["projects"].label_from_instance = lambda p: (
            f"{p.name} ({p.department.name})"
            if p.department_id and p.department_id != self.instance.pk
            else p.name
        )
        if self.instance.pk:
            self.initial["projects"] = list(self.instance.projects.values_list("pk", flat=True))
            self.before = sorted(self.instance.projects.values_list("name", flat=True))
        else:
            self.before = []

    def clean(self):
        data = super().clean()
        projects = data.get("projects")
        if projects is None or not self.instance.pk:
            return data
        found = misfits(
            department_limits(self.instance), children_limits(self.instance, projects=projects)
        )
        for misfit in found:
            parent = misfit.parent
            values = {
                "total": boards(misfit.total), "guaranteed": boards(parent.guaranteed),
                "maximum": boards(parent.maximum),
                "child": misfit.child.holder if misfit.child else "",
            }  # fmt: skip
            if misfit.field == "guaranteed":
                message = (
                    _(
                        "These projects' guarantees add up to %(total)s, above the "
                        "department's %(guaranteed)s."
                    )
                    % values
                )
            else:
                message = (
                    _("The maximum of %(child)s is %(total)s, above the department's %(maximum)s.")
                    % values
                )
            self.add_error("projects", message)
        return data

    @transaction.atomic
    def save(self, user=None, commit=True):
        department = super().save(commit=False)
        department.save()
        chosen = list(self.cleaned_data["projects"])
        department.projects.exclude(pk__in=[p.pk for p in chosen]).update(department=None)
        Project.objects.filter(pk__in=[p.pk for p in chosen]).update(department=department)
        after = sorted(p.name for p in chosen)
        if after != self.before:
            record(department, str(_("projects")), self.before or None, after, user)
        return department

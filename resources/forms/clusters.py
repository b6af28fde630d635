"""The settings form of a Kubernetes cluster (platform admins only).

Credentials are write-only: the token and the kubeconfig are never rendered back, not even
after an error; left empty on an edit, the stored one is kept.
"""

from __future__ import annotations

import posixpath

import yaml
from cryptography import x509
from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils.translation import gettext_lazy as _

from console import names
from console.sealed import Unreadable
from resources.forms.inventory import NameRules
from resources.models import Cluster, ResourcePool

TOKEN = Cluster.Connection.TOKEN
KUBECONFIG = Cluster.Connection.KUBECONFIG

# Which fields belong to which connection kind (the page shows only the chosen kind's).
CONNECTION_FIELDS = {
    TOKEN: ("api_url", "ca_certificate", "token"),
    KUBECONFIG: ("kubeconfig", "context"),
}


class SecretTextarea(forms.Textarea):
    """A textarea that never renders its value: what was typed stays in the browser."""

    def format_value(self, value):
        return None


def _secret_field(label, widget, help_text, max_length: int) -> forms.CharField:
    return forms.CharField(
        label=label, required=False, strip=True, widget=widget, help_text=help_text,
        max_length=max_length,
    )  # fmt: skip


def parse_kubeconfig(text: str) -> tuple[dict | None, str]:
    """The kubeconfig as a mapping, or None and why not (in words)."""
    try:
        document = yaml.safe_load(text)
    except RecursionError:  # nested deeper than any kubeconfig
        return None, str(_("This YAML is not a kubeconfig: it has no list of contexts."))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = _(" (line %(line)d)") % {"line": mark.line + 1} if mark else ""
        return None, _("This is not valid YAML%(where)s.") % {"where": where}
    if not isinstance(document, dict) or not isinstance(document.get("contexts"), list):
        return None, str(_("This YAML is not a kubeconfig: it has no list of contexts."))
    return document, ""


def context_names(document: dict) -> list[str]:
    return [
        str(entry["name"])
        for entry in document.get("contexts") or []
        if isinstance(entry, dict) and entry.get("name")
    ]


class ClusterForm(NameRules, forms.ModelForm):
    name_rules = {
        "name": names.LABEL_VALUE,
        "namespace": names.KUBERNETES_NAME,
        "queue": names.KUBERNETES_NAME,
        "accelerator_resource": names.EXTENDED_RESOURCE,
        "storage_claim": names.OBJECT_NAME,
    }
    token = _secret_field(
        _("Bearer token"),
        forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        _("A service account's token. It is stored encrypted and never shown again."),
        max_length=16_384,
    )
    kubeconfig = _secret_field(
        _("Kubeconfig"),
        SecretTextarea(attrs={"rows": 6, "spellcheck": "false", "autocomplete": "off"}),
        _("The whole file, pasted. It is stored encrypted and never shown again."),
        max_length=262_144,
    )

    class Meta:
        model = Cluster
        fields = [
            "name", "description", "connection", "api_url", "ca_certificate", "token",
            "kubeconfig", "context", "namespace", "queue", "accelerator_resource",
            "storage_claim", "storage_host_path", "default_pool", "prometheus_url",
        ]  # fmt: skip
        labels = {"connection": _("Connect with")}
        widgets = {
            "connection": forms.RadioSelect,
            "ca_certificate": forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        }
        help_texts = {
            "storage_claim": _(
                "A PersistentVolumeClaim in the namespace that holds the console's storage: "
                "jobs' /workspace folders (algorithm, datasets, models, outputs) are mounted "
                "from it."
            ),
            "storage_host_path": _(
                "Or, instead of a claim: the absolute folder where every node mounts the "
                "console's storage, e.g. /mnt/console. Fill in one of the two."
            ),
            "default_pool": _(
                "The dedicated pool its nodes go into when they carry no pool label. "
                "Blank: they are shared nodes."
            ),
            "prometheus_url": _(
                "Optional: where DCGM exporter GPU metrics can be queried, e.g. "
                "http://prometheus.monitoring:9090."
            ),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["default_pool"].queryset = ResourcePool.objects.live()
        self.fields["connection"].widget.attrs.update(
            {"class": "form-check-input", "data-cluster-connection": ""}
        )
        for name in ("api_url", "prometheus_url", "context", "storage_host_path"):
            self.fields[name].widget.attrs.update(autocomplete="off", spellcheck="false")
        for name, stored in (
            ("token", self.instance.has_token),
            ("kubeconfig", self.instance.has_kubeconfig),
        ):
            if stored:
                self.fields[name].widget.attrs["placeholder"] = _("stored (hidden)")
                self.fields[name].help_text = _(
                    "One is stored (never shown). Leave empty to keep it, or enter a new one "
                    "to replace it."
                )
        # Required by the chosen connection kind, so that the form marks them.
        chosen = self.data.get("connection") if self.is_bound else self.instance.connection
        for name, required, message in (
            ("api_url", chosen == TOKEN, _("Enter the API server's address.")),
            ("token", chosen == TOKEN and not self.instance.has_token,
             _("Enter the bearer token the console signs in with.")),
            ("kubeconfig", chosen == KUBECONFIG and not self.instance.has_kubeconfig,
             _("Paste the kubeconfig.")),
        ):  # fmt: skip
            self.fields[name].required = required
            self.fields[name].error_messages["required"] = message

    # Field rules
    def clean_api_url(self) -> str:
        value = self.cleaned_data["api_url"].strip()
        if not value:
            return value
        if value.lower().startswith("http://"):
            raise ValidationError(
                _("Use an https:// address: over http the token would travel unencrypted."),
                code="scheme",
            )
        try:
            URLValidator(schemes=["https"])(value)
        except ValidationError:
            raise ValidationError(
                _("Not an address: expected e.g. https://k8s.example.com:6443."), code="invalid"
            ) from None
        return value.rstrip("/")

    def clean_ca_certificate(self) -> str:
        value = self.cleaned_data["ca_certificate"].strip()
        if not value:
            return value
        try:
            x509.load_pem_x509_certificates(value.encode())
        except ValueError:
            raise ValidationError(
                _(
                    "Not a PEM certificate: paste the text from “-----BEGIN CERTIFICATE-----” "
                    "to “-----END CERTIFICATE-----”."
                ),
                code="pem",
            ) from None
        return value + "\n"

    def clean_token(self) -> str:
        value = self.cleaned_data["token"]
        if any(character.isspace() for character in value):
            raise ValidationError(_("A token has no spaces or line breaks."), code="token")
        return value

    def clean_storage_host_path(self) -> str:
        value = self.cleaned_data["storage_host_path"].strip()
        if not value:
            return value
        if not value.startswith("/") or "\0" in value:
            raise ValidationError(
                _("An absolute folder, starting with “/”, e.g. /mnt/console."), code="path"
            )
        if ".." in value.split("/"):
            raise ValidationError(_("The folder may not contain “..”."), code="path")
        return posixpath.normpath(value)

    def clean_prometheus_url(self) -> str:
        value = self.cleaned_data["prometheus_url"].strip()
        if value:
            try:
                URLValidator(schemes=["http", "https"])(value)
            except ValidationError:
                raise ValidationError(
                    _("Not an address: expected e.g. http://prometheus.monitoring:9090."),
                    code="invalid",
                ) from None
        return value.rstrip("/")

    # Rules across fields
    def clean(self):
        data = super().clean()
        connection = data.get("connection")
        if connection == TOKEN:
            self._clean_token_connection(data)
        elif connection == KUBECONFIG:
            self._clean_kubeconfig_connection(data)
        claim, host_path = data.get("storage_claim"), data.get("storage_host_path")
        if claim and host_path:
            self.add_error(
                "storage_host_path",
                _("Fill in a claim or a host folder, not both: jobs mount one storage."),
            )
        elif not claim and not host_path and not self._has_error_on("storage_"):
            self.add_error(
                "storage_claim",
                _("Jobs need the console's storage for their /workspace folders: give a "
                  "claim or a host folder."),
            )  # fmt: skip
        return data

    def _has_error_on(self, prefix: str) -> bool:
        return any(name.startswith(prefix) for name in self.errors)

    def _clean_token_connection(self, data) -> None:
        if "api_url" in data and not data["api_url"]:
            self.add_error("api_url", _("Enter the API server's address."))
        if "token" in data and not data["token"] and not self.instance.has_token:
            self.add_error("token", _("Enter the bearer token the console signs in with."))

    def _clean_kubeconfig_connection(self, data) -> None:
        text = data.get("kubeconfig", "")
        if text:
            document, problem = parse_kubeconfig(text)
            if document is None:
                self.add_error("kubeconfig", problem)
                return
        elif self.instance.has_kubeconfig:
            try:
                document, _problem = parse_kubeconfig(self.instance.kubeconfig())
            except Unreadable:
                self.add_error(
                    "kubeconfig",
                    _("The stored kubeconfig cannot be read (the console's key changed): "
                      "paste it again."),
                )  # fmt: skip
                return
            if document is None:
                return
        else:
            if "kubeconfig" not in self.errors:
                self.add_error("kubeconfig", _("Paste the kubeconfig."))
            return
        contexts = context_names(document)
        wanted = data.get("context") or str(document.get("current-context") or "")
        if wanted in contexts:
            return
        listed = ", ".join(contexts) or _("none")
        if not wanted:
            message = _(
                "The kubeconfig names no current context: choose one of its contexts: %(contexts)s."
            )
        else:
            message = _("The kubeconfig has no context “%(name)s”. Its contexts: %(contexts)s.")
        self.add_error("context", message % {"name": wanted, "contexts": listed})

    def full_clean(self):
        super().full_clean()
        if self.is_bound and self.errors:
            again = _("Not kept after an error, for safety: enter it again.")
            for name in ("token", "kubeconfig"):
                if self.data.get(name):
                    # The bound field copied the help text when the fields were cleaned.
                    self.fields[name].help_text = self[name].help_text = again

    def save(self, commit=True):
        cluster = self.instance
        connection = self.cleaned_data["connection"]
        if connection == TOKEN:
            if self.cleaned_data["token"]:
                cluster.set_token(self.cleaned_data["token"])
            cluster.sealed_kubeconfig = ""
        elif connection == KUBECONFIG:
            if self.cleaned_data["kubeconfig"]:
                cluster.set_kubeconfig(self.cleaned_data["kubeconfig"])
            cluster.sealed_token = ""
        else:
            cluster.sealed_token = cluster.sealed_kubeconfig = ""
        return super().save(commit)

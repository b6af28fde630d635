"""What a name typed into the console may be, chosen by what the name becomes.

* ``LABEL_VALUE``: pools, accelerator models and driver versions are matched against node
  labels, so they follow Kubernetes' label-value rule; node specs and images follow it too,
  so every inventory name reads the same way.
* ``NODE_NAME``: a node's name is its Kubernetes name (an RFC 1123 subdomain) and its host
  name on the local backend.
* ``DNS_LABEL``: a development environment's name becomes a job's name (a host name in
  distributed jobs), like the job form's own rule (jobs/forms/rules.py).
* ``IMAGE_REFERENCE``: what a container runtime pulls.
* ``KUBERNETES_NAME``: a cluster's namespace and Volcano queue (a DNS-1123 label).
* ``OBJECT_NAME``: a Kubernetes object's name, e.g. a PersistentVolumeClaim (a DNS-1123
  subdomain: ``NODE_NAME``'s rule, worded for any object).
* ``EXTENDED_RESOURCE``: how nodes advertise accelerators, e.g. ``nvidia.com/gpu``.

Catalog names become folder names in jobs (``resources.catalog.mounts.is_folder_name``).
Each rule's message says both the length and the characters, so one message covers both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django import forms
from django.core.validators import MaxLengthValidator
from django.utils.functional import Promise
from django.utils.translation import ngettext_lazy


@dataclass(frozen=True)
class NameRule:
    pattern: re.Pattern
    max_length: int
    message: str | Promise  # with %(max)d; a plural (ngettext_lazy) counted by "max"

    def problem(self, value: str) -> str | None:
        if len(value) <= self.max_length and self.pattern.fullmatch(value):
            return None
        return self.message % {"max": self.max_length}

    def __call__(self, value: str) -> None:
        """A form field validator."""
        problem = self.problem(value)
        if problem:
            raise forms.ValidationError(problem, code="invalid")

    def apply(self, field: forms.CharField) -> None:
        """Check ``field`` by this rule, with this rule's one message also for its length."""
        field.validators = [v for v in field.validators if not isinstance(v, MaxLengthValidator)]
        field.validators.append(self)
        field.max_length = self.max_length
        field.widget.attrs["maxlength"] = self.max_length
        field.widget.attrs.update(autocomplete="off", spellcheck="false")


_LABEL = r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?"
_DNS_PART = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# The OCI distribution grammar, slightly simplified: [domain[:port]/]path[:tag][@digest].
_COMPONENT = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_DOMAIN = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*"
_REFERENCE = (
    rf"({_DOMAIN}(:[0-9]+)?/)?{_COMPONENT}(/{_COMPONENT})*"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*"
    r":[0-9a-fA-F]{32,})?"
)

LABEL_VALUE = NameRule(
    re.compile(_LABEL, re.ASCII),
    63,
    ngettext_lazy(
        "Up to %(max)d character: letters, digits, “-”, “_” and “.”, beginning and "
        "ending with a letter or digit (no spaces).",
        "Up to %(max)d characters: letters, digits, “-”, “_” and “.”, beginning and "
        "ending with a letter or digit (no spaces).",
        "max",
    ),
)
NODE_NAME = NameRule(
    re.compile(rf"{_DNS_PART}(\.{_DNS_PART})*", re.ASCII),
    253,
    ngettext_lazy(
        "Up to %(max)d character: lowercase letters, digits, “-” and “.”, each part "
        "between dots beginning and ending with a letter or digit, like a host name.",
        "Up to %(max)d characters: lowercase letters, digits, “-” and “.”, each part "
        "between dots beginning and ending with a letter or digit, like a host name.",
        "max",
    ),
)
DNS_LABEL = NameRule(
    re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?", re.ASCII),
    40,
    ngettext_lazy(
        "Up to %(max)d character: lowercase letters, digits and “-”, starting with a "
        "letter and not ending with “-”: it becomes a job's name, a host name in "
        "distributed jobs.",
        "Up to %(max)d characters: lowercase letters, digits and “-”, starting with a "
        "letter and not ending with “-”: it becomes a job's name, a host name in "
        "distributed jobs.",
        "max",
    ),
)
IMAGE_REFERENCE = NameRule(
    re.compile(_REFERENCE, re.ASCII),
    255,
    ngettext_lazy(
        "An image reference such as “registry.example.com/team/pytorch:2.3”: up to "
        "%(max)d character, a lowercase repository path, no spaces.",
        "An image reference such as “registry.example.com/team/pytorch:2.3”: up to "
        "%(max)d characters, a lowercase repository path, no spaces.",
        "max",
    ),
)
KUBERNETES_NAME = NameRule(
    re.compile(_DNS_PART, re.ASCII),
    63,
    ngettext_lazy(
        "Up to %(max)d character: lowercase letters, digits and “-”, beginning and "
        "ending with a letter or digit (Kubernetes' rule for this name).",
        "Up to %(max)d characters: lowercase letters, digits and “-”, beginning and "
        "ending with a letter or digit (Kubernetes' rule for this name).",
        "max",
    ),
)
OBJECT_NAME = NameRule(
    NODE_NAME.pattern,
    253,
    ngettext_lazy(
        "Up to %(max)d character: lowercase letters, digits, “-” and “.”, each part "
        "between dots beginning and ending with a letter or digit (Kubernetes' rule for "
        "object names).",
        "Up to %(max)d characters: lowercase letters, digits, “-” and “.”, each part "
        "between dots beginning and ending with a letter or digit (Kubernetes' rule for "
        "object names).",
        "max",
    ),
)
# A domain, "/", and a name of up to 63 characters; Kubernetes keeps kubernetes.io for itself.
EXTENDED_RESOURCE = NameRule(
    re.compile(
        rf"(?!([^/]*\.)?kubernetes\.io/){_DNS_PART}(\.{_DNS_PART})*/(?=.{{1,63}}\Z){_LABEL}",
        re.ASCII,
    ),
    253,
    ngettext_lazy(
        "A resource name as nodes advertise it, a domain and a name such as "
        "“nvidia.com/gpu” or “huawei.com/Ascend910” (up to %(max)d character, no "
        "spaces).",
        "A resource name as nodes advertise it, a domain and a name such as "
        "“nvidia.com/gpu” or “huawei.com/Ascend910” (up to %(max)d characters, no "
        "spaces).",
        "max",
    ),
)

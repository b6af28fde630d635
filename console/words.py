"""Messages kept as their English source and parameters, worded in each reader's language
when shown (events, a job's reason): the console is read in English and Chinese, and a
worker writing an event cannot know who will read it.

``said(gettext_noop("Stopped by %(user)s."), user=name)`` is a ``str`` (the English text,
what is stored and searched) that also carries the message id and its parameters; the
lifecycle stores both, and :func:`wording` translates at display time. A message with a
number before a noun is said with both its forms, ``said(counted("%(n)s node reserved.",
"%(n)s nodes reserved.", "n"), n=2)``, and worded with ``ngettext`` for the reader.
"""

from __future__ import annotations

from typing import NamedTuple

from django.utils.functional import Promise
from django.utils.translation import gettext, ngettext, override


class Counted(NamedTuple):
    """A stored message's two English forms, and the parameter that holds its number."""

    singular: str
    plural: str
    count: str


def counted(singular: str, plural: str, count: str) -> Counted:
    """Marks a plural message for :func:`said`. ``manage.py makemessages`` extracts calls of
    this name as plural entries (console/management/commands/makemessages.py)."""
    return Counted(singular, plural, count)


def plural_number(value) -> int:
    """The whole number gettext chooses a plural form by: a fraction is never "one"."""
    number = float(value)
    return int(number) if number.is_integer() else 2


class Said(str):
    msgid: str
    params: dict
    translated: list[str]
    nested: dict  # parameter -> the stored form of a message said inside this one

    plural: Counted | None  # both forms, when the message has a number before a noun

    def __new__(
        cls, msgid: str, params: dict, translated: list[str], nested: dict | None = None,
        plural: Counted | None = None,
    ) -> Said:  # fmt: skip
        english = msgid
        if plural is not None and plural_number(params[plural.count]) != 1:
            english = plural.plural
        text = super().__new__(cls, english % params if params else english)
        text.msgid, text.params, text.translated = msgid, params, translated
        text.nested, text.plural = nested or {}, plural
        return text

    @classmethod
    def from_json(cls, stored: dict) -> Said:
        plural = stored.get("plural")
        return cls(stored["msgid"], stored["params"], stored.get("translated", []),
                   stored.get("nested"), Counted(*plural) if plural else None)  # fmt: skip

    def as_json(self) -> dict:
        stored = {"msgid": self.msgid, "params": self.params, "translated": self.translated}
        if self.nested:
            stored["nested"] = self.nested
        if self.plural is not None:
            stored["plural"] = list(self.plural)
        return stored


def said(msgid: str | Counted, **params) -> Said:
    """``msgid`` must be marked with ``gettext_noop`` (or be :func:`counted`) where it is
    written, so that makemessages finds it. Parameters are text or numbers; a lazily
    translated one (a choice's label: "Urgent") is kept in English and translated when
    shown, like the message. A parameter that was itself :func:`said` is worded in the
    reader's language too."""
    plain, translated, nested = {}, [], {}
    for key, value in params.items():
        if isinstance(value, Said):
            plain[key] = str(value)
            nested[key] = value.as_json()
        elif isinstance(value, Promise):
            with override("en"):
                plain[key] = str(value)
            translated.append(key)
        else:
            plain[key] = value if isinstance(value, int | float) else str(value)
    if isinstance(msgid, Counted):
        return Said(msgid.singular, plain, translated, nested, plural=msgid)
    return Said(msgid, plain, translated, nested)


def wording(text: str, stored: dict | None) -> str:
    """The reader's wording of a stored message: its translation when it was :func:`said`,
    else the text itself (translated if it happens to be a known message)."""
    if not stored:
        return gettext(text) if text else text
    params = dict(stored["params"])
    for key in stored.get("translated", ()):
        params[key] = gettext(params[key])
    for key, inner in stored.get("nested", {}).items():
        params[key] = wording(params[key], inner)
    try:
        if plural := stored.get("plural"):
            singular, many, count = plural
            return ngettext(singular, many, plural_number(params[count])) % params
        return gettext(stored["msgid"]) % params
    except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder
        return text

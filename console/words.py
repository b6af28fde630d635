"""Messages kept as their English source and parameters, worded in each reader's language
when shown (events, a job's reason): the console is read in English and Chinese, and a
worker writing an event cannot know who will read it.

``said(gettext_noop("Stopped by %(user)s."), user=name)`` is a ``str`` (the English text,
what is stored and searched) that also carries the message id and its parameters; the
lifecycle stores both, and :func:`wording` translates at display time.
"""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext, override


class Said(str):
    msgid: str
    params: dict
    translated: list[str]
    nested: dict  # parameter -> the stored form of a message said inside this one

    def __new__(
        cls, msgid: str, params: dict, translated: list[str], nested: dict | None = None
    ) -> Said:
        text = super().__new__(cls, msgid % params if params else msgid)
        text.msgid, text.params, text.translated = msgid, params, translated
        text.nested = nested or {}
        return text

    @classmethod
    def from_json(cls, stored: dict) -> Said:
        return cls(stored["msgid"], stored["params"], stored.get("translated", []),
                   stored.get("nested"))  # fmt: skip

    def as_json(self) -> dict:
        stored = {"msgid": self.msgid, "params": self.params, "translated": self.translated}
        if self.nested:
            stored["nested"] = self.nested
        return stored


def said(msgid: str, **params) -> Said:
    """``msgid`` must be marked with ``gettext_noop`` where it is written, so that
    makemessages finds it. Parameters are text or numbers; a lazily translated one (a
    choice's label: "Urgent") is kept in English and translated when shown, like the
    message. A parameter that was itself :func:`said` is worded in the reader's language
    too."""
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
        return gettext(stored["msgid"]) % params
    except (KeyError, TypeError, ValueError):  # a translation that lost a placeholder
        return text

"""The console's words read well in English and Chinese.

Over every template, every message in the Python sources and every entry of the Chinese
catalogue: no doubled punctuation ("..", "。。", "：:"), no number before a plural noun
outside a plural form ("1 nodes"), no "(s)", no Chinese entry left in English; and a job's
status is one word on every page that shows it, in both languages. Each problem is
reported as ``file:line: problem: text``.
"""

from __future__ import annotations

import re
import tokenize
from io import BytesIO
from pathlib import Path

import pytest
from babel.messages.extract import extract, extract_from_file
from babel.messages.pofile import read_po
from django.utils import translation
from django.utils.translation.template import templatize

from jobs.models import Status

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
CATALOGUE = ROOT / "console" / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
SOURCES = ("console", "jobs", "resources")

# Python's gettext functions as Django's makemessages knows them, plus console.words.counted.
KEYWORDS = {
    "_": None, "gettext": None, "gettext_lazy": None, "gettext_noop": None,
    "ngettext": (1, 2), "ngettext_lazy": (1, 2), "counted": (1, 2),
    "pgettext": ((1, "c"), 2), "pgettext_lazy": ((1, "c"), 2),
    "npgettext": ((1, "c"), 2, 3), "npgettext_lazy": ((1, "c"), 2, 3),
}  # fmt: skip

PUNCTUATION = ".,;:!?。，；：！？、"
DOUBLED = re.compile(rf"([{PUNCTUATION}])\s*([{PUNCTUATION}])")
# Nouns a count is put before in the console's words; a number before one of these needs a
# plural form. Verbs that look like plurals ("runs", "means") are left out on purpose.
NOUNS = (
    "attempts|boards|changes|characters|checks|cpus|datasets|days|entries|errors|events|"
    "faults|files|gpus|hours|images|items|iterations|jobs|lines|machines|members|minutes|"
    "models|mounts|nodes|pods|pools|problems|processes|projects|recoveries|replicas|resumes|"
    "restarts|rows|seconds|slices|specs|steps|sub-tasks|subtasks|tasks|times|users|"
    "variables|versions|volumes|weeks|workers"
)
# A number as the words hold it: a placeholder, a template variable or digits; a word such
# as "more" may stand between it and its noun.
COUNT = (
    r"(?:%\((?P<name>\w+)\)[sdf]|\{\{\s*(?P<var>[^}]+?)\s*\}\}|(?<![\w.,/])\d+(?:\.\d+)?)"
    rf"\s+(?:(?:more|other|free|queued|running|live|urgent)\s+)?(?P<noun>{NOUNS})\b"
)
COUNTED = re.compile(COUNT, re.IGNORECASE)
# Placeholders that hold names, not numbers ("runs on %(kinds)s boards").
NAMES = {"kind", "kinds", "model", "what", "name", "names"}
SENTENCE = re.compile(r"[A-Za-z]{2,}(?:[ '-][A-Za-z]{2,}){2,}")
CJK = re.compile(r"[\u4e00-\u9fff]")


def doubled(text: str) -> list[str]:
    """Doubled punctuation, except an ellipsis, the “..” of a path and "e.g.,"."""
    found = []
    for match in DOUBLED.finditer(text):
        start, end = match.span()
        pair = match.group(1) + match.group(2)
        if pair == ".." and (
            text[start - 1 : start] in {".", "“", '"'} or text[end : end + 1] in {".", "”", '"'}
        ):
            continue
        if pair == ".," and re.search(r"\b(e\.g|i\.e|etc)$", text[:start]):
            continue
        found.append(match.group(0))
    return found


def uncounted(text: str) -> list[str]:
    """Numbers before plural nouns, and "(s)": both want a plural form."""
    found = []
    for match in COUNTED.finditer(text):
        name = match.group("name") or (match.group("var") or "").split("|")[0].split(".")[-1]
        if name not in NAMES:
            found.append(match.group(0))
    found += re.findall(r"\w\(s\)", text)
    return found


def problems_of(text: str, plural: bool) -> list[str]:
    said = [f"doubled punctuation {p!r}" for p in doubled(text)]
    if not plural:
        said += [f"number before a plural noun, no plural form {p!r}" for p in uncounted(text)]
    return said


def report(found: list[str]) -> str:
    return "\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "doubles", "counts"),
    [
        ("Saved.. Done", [".."], []),
        ("已保存。。", ["。。"], []),
        ("原因：: 无", ["：:"], []),
        ("Done, .", [", ."], []),
        ("完成.。", [".。"], []),
        ("Wait %(n)s minutes.", [], ["%(n)s minutes"]),
        ("{{ n }} more boards", [], ["{{ n }} more boards"]),
        ("on 2 nodes", [], ["2 nodes"]),
        ("1 node(s) reserved", [], ["e(s)"]),
        # What reads well as it is:
        ("Wait…", [], []),
        ("No “..” in a path; e.g., this.", [], []),
        ("Runs on %(kinds)s boards; worker 0 runs it; 0 means AllReduce.", [], []),
        ("Version 2.3, at 10:30.", [], []),
    ],
)
def test_the_checks_find_what_they_should_and_nothing_else(text, doubles, counts):
    assert doubled(text) == doubles
    assert uncounted(text) == counts


# Templates ----------------------------------------------------------------------------------
def _blank(text: str, pattern: str) -> str:
    """``text`` with what ``pattern`` matches turned to spaces, lines kept."""
    return re.sub(pattern, lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)


def template_text(source: str) -> str:
    """What a template shows as it is written: comments, plural blocks and tags left out,
    variables as ``{{ x }}``, line numbers kept."""
    text = _blank(source, r"\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}")
    text = _blank(text, r"\{% blocktranslate[^%]*\bcount\b.*?\{% endblocktranslate %\}")
    text = _blank(text, r"\{%.*?%\}")
    return _blank(text, r"<[^>]*>")


def template_messages(path: Path):
    """(line, message) for each message of a template, as makemessages sees it: Django turns
    the template into Python-like source that gettext's extractors read."""
    python = templatize(path.read_text(), origin=str(path))
    # Its lines keep the template's indentation, which Python's tokenizer refuses.
    python = "\n".join(line.lstrip() for line in python.splitlines())
    for line, message, _comments, _context in extract(
        "python", BytesIO(python.encode()), keywords=KEYWORDS
    ):
        yield line, message


def test_templates_read_well():
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        where = path.relative_to(ROOT)
        for number, line in enumerate(template_text(path.read_text()).splitlines(), 1):
            shown = re.sub(r"\{\{[^}]*\}\}", "X", line)
            found += [f"{where}:{number}: doubled punctuation {p!r}" for p in doubled(shown)]
            found += [f"{where}:{number}: number before a plural noun {p!r}"
                      for p in uncounted(line)]  # fmt: skip
        for number, message in template_messages(path):
            plural = isinstance(message, tuple)
            for text in message if plural else (message,):
                found += [f"{where}:{number}: {p}" for p in problems_of(text, plural)]
    assert not found, report(found)


# Python -------------------------------------------------------------------------------------
def _s_in_strings(path: Path) -> list[int]:
    """Lines of ``path`` whose strings (f-strings too) say "node(s)"."""
    kinds = {tokenize.STRING, tokenize.FSTRING_MIDDLE}
    with path.open("rb") as source:
        return [
            token.start[0]
            for token in tokenize.tokenize(source.readline)
            if token.type in kinds and re.search(r"[A-Za-z]\(s\)", token.string)
        ]


def test_python_messages_read_well():
    found = []
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            where = path.relative_to(ROOT)
            for number, message, _comments, _context in extract_from_file(
                "python", path, keywords=KEYWORDS
            ):
                plural = isinstance(message, tuple)
                for text in message if plural else (message,):
                    found += [f"{where}:{number}: {p}" for p in problems_of(text, plural)]
            found += [f"{where}:{line}: “(s)” instead of a plural form"
                      for line in _s_in_strings(path)]  # fmt: skip
    assert not found, report(found)


# The catalogue ------------------------------------------------------------------------------
def catalogue():
    with CATALOGUE.open("rb") as source:
        return read_po(source, locale="zh_Hans")


def test_catalogue_reads_well():
    found = []
    where = CATALOGUE.relative_to(ROOT)
    for message in catalogue():
        if not message.id:
            continue
        plural = message.pluralizable
        ids = message.id if plural else (message.id,)
        strings = [s for s in (message.string if plural else (message.string,)) if s]
        for text in ids:
            found += [f"{where}:{message.lineno}: {p}" for p in problems_of(text, plural)]
        for text in strings:
            found += [f"{where}:{message.lineno}: doubled punctuation {p!r}"
                      for p in doubled(text)]  # fmt: skip
            if SENTENCE.search(text) and (text in ids or not CJK.search(text)):
                found.append(f"{where}:{message.lineno}: left in English: {text!r}")
    assert not found, report(found)


def test_catalogue_keeps_its_placeholders():
    found = []
    catalog = catalogue()
    for message, errors in catalog.check():
        found += [f"{CATALOGUE.relative_to(ROOT)}:{message.lineno}: {e}" for e in errors]
    assert not found, report(found)


def test_a_status_is_one_word_in_the_catalogue():
    """Wherever the catalogue says a status on its own ("stopped", "Stopped: …"), it uses the
    word the status badge shows."""
    entries = {m.id: m for m in catalogue() if m.id and not m.pluralizable}
    found = []
    for status in Status:
        with translation.override("en"):
            label = str(status.label)
        word = entries[label].string
        for msgid, message in entries.items():
            same = msgid.lower() == label.lower() or msgid.lower() == f"{label.lower()}."
            leads = msgid.startswith(f"{label}:")
            if (same or leads) and not message.string.startswith(word):
                found.append(
                    f"{CATALOGUE.relative_to(ROOT)}:{message.lineno}: {msgid!r} is "
                    f"{message.string!r}, "
                    f"but the status {label!r} is {word!r}"
                )
    assert not found, report(found)


# The pages ----------------------------------------------------------------------------------
BADGE = re.compile(r'<span class="badge status-(?P<status>\w+)"[^>]*>(?P<word>[^<]*)</span>')


def badges(response) -> dict[str, set[str]]:
    """The word of each status badge on a page, by status (not the dashboard's counts)."""
    words: dict[str, set[str]] = {}
    for match in BADGE.finditer(response.content.decode()):
        if not match["word"].strip().isdigit():
            words.setdefault(match["status"], set()).add(match["word"].strip())
    return words


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_status_is_one_word_on_every_page(client, alice, vision, language):
    """The flash after create, the job list, the job's page, the queue and the dashboard
    say a job's status with the model's label, in the reader's language."""
    from jobs.models import Job
    from tests.jobs.factories import JobFactory
    from tests.resources.catalog_factories import AlgorithmFactory
    from tests.resources.factories import ImageFactory, NodeFactory, NodeSpecFactory

    NodeFactory(name="cpu-node")
    form = {
        "name": "train-1", "others_access": "none", "job_type": "regular", "priority": "0",
        "algorithm": AlgorithmFactory(name="resnet", owner=alice, project=vision).pk,
        "command": "python train.py", "mode": "single", "node_count": "1", "ps_count": "0",
        "specs": [NodeSpecFactory(name="cpu-4", cpu_millicores=4000, memory_mib=8192).pk],
        "image": ImageFactory(name="pytorch").pk, "graceful_shutdown_seconds": "30",
        "duration_hours": "24", "subtask_count": "0", "dataset_count": "0",
    }  # fmt: skip
    client.force_login(alice)
    client.post("/i18n/setlang/", {"language": language, "next": "/"})
    created = client.post("/jobs/new/", form, follow=True)
    flash = " ".join(str(message) for message in created.context["messages"])
    others = {
        status: JobFactory(owner=alice, project=vision, status=status, phase=status)
        for status in Status
        if status != Status.QUEUED
    }
    job = Job.objects.get(name="train-1")
    with translation.override(language):
        words = {status.value: str(status.label) for status in Status}
    assert words[Status.QUEUED] in flash, flash
    pages = {
        "job page": created,
        "job list": client.get("/jobs/"),
        "queue": client.get("/queue/"),
        "dashboard": client.get("/"),
    }
    pages |= {f"page of the {s} job": client.get(f"/jobs/{j.pk}/") for s, j in others.items()}
    found = []
    for page, response in pages.items():
        shown = badges(response)
        assert shown, f"no status on the {page}"
        for status, said in shown.items():
            if said != {words[status]}:
                found.append(f"{page}: {status} is {sorted(said)}, not {words[status]!r}")
    assert set(badges(pages["job list"])) == set(words)
    assert job.status == Status.QUEUED
    assert not found, report(found)

"""The run-command rule of SPEC J16, as a pure function.

Commands run without a shell: the platform executes the first word with the rest as its
arguments (expanding ``$VAR`` / ``${VAR}`` from the job's environment, as Kubernetes does).
So the command must start with an executable, and shell syntax that joins or redirects
commands is refused with the exact ``bash -c "..."`` line that would do what was meant.
A backslash at the end of a line continues it, as in the seeds' multi-line examples.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Tokens shlex yields for unquoted shell operators (punctuation_chars mode).
OPERATORS = {
    ";": "“;”", "&&": "“&&”", "||": "“||”", "|": "“|”", "&": "“&”",
    ">": "a redirection (“>”)", ">>": "a redirection (“>>”)", "<": "a redirection (“<”)",
    ";;": "“;;”", "|&": "“|&”", "(": "“(”", ")": "“)”",
}  # fmt: skip
MAX_LENGTH = 10_000


@dataclass(frozen=True)
class CommandProblem:
    code: str  # "empty", "too_long", "quote", "assignment", "operator", "newline"
    detail: str  # the offending text
    suggestion: str  # a command that would be accepted, or ""


def wrap(command: str) -> str:
    """``bash -c "..."`` around a command, escaping what double quotes need."""
    inner = re.sub(r'(["\\$`])', r"\\\1", command.strip()) if '"' in command else command.strip()
    return f'bash -c "{inner}"'


def _unquoted_newline(command: str) -> bool:
    """True when a newline outside quotes separates two commands."""
    quote = None
    escaped = False
    for char in command:
        if escaped:
            escaped = False
            continue
        if char == "\\" and quote != "'":
            escaped = True
            continue
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "\n":
            return True
    return False


def check_command(command: str) -> CommandProblem | None:
    """None when the command is acceptable; otherwise what is wrong with it."""
    text = (command or "").strip()
    if not text:
        return CommandProblem("empty", "", "")
    if len(text) > MAX_LENGTH:
        return CommandProblem("too_long", str(len(text)), "")
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    try:
        lexer = shlex.shlex(joined, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return CommandProblem("quote", "", "")
    if not tokens:
        return CommandProblem("empty", "", "")
    if _unquoted_newline(joined):
        return CommandProblem("newline", "", wrap(" && ".join(joined.split("\n"))))
    for token in tokens:
        if token in OPERATORS or (token and set(token) <= set(";&|<>()")):
            return CommandProblem("operator", OPERATORS.get(token, f"“{token}”"), wrap(joined))
    if ASSIGNMENT.match(tokens[0]):
        return CommandProblem("assignment", tokens[0], wrap(joined))
    return None

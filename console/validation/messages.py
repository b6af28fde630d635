"""Words for the command rule's problems, in the user's language."""

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from console.validation.command import CommandProblem


def describe(problem: CommandProblem) -> str:
    if problem.code == "empty":
        return _("Enter the command to run.")
    if problem.code == "too_long":
        return ngettext(
            "The command is too long (%(n)s character; at most 10,000).",
            "The command is too long (%(n)s characters; at most 10,000).",
            int(problem.detail),
        ) % {"n": problem.detail}
    if problem.code == "quote":
        return _("A quote is not closed.")
    if problem.code == "assignment":
        return _(
            "“%(word)s” sets a variable; it is not an executable, and commands run without "
            "a shell. Wrap the command: %(suggestion)s"
        ) % {"word": problem.detail, "suggestion": problem.suggestion}
    if problem.code == "newline":
        return _(
            "The command has several lines, and commands run without a shell. Join them "
            "into one: %(suggestion)s"
        ) % {"suggestion": problem.suggestion}
    return _(
        "%(operator)s joins or redirects commands, and commands run without a shell. "
        "Wrap the command: %(suggestion)s"
    ) % {"operator": problem.detail, "suggestion": problem.suggestion}

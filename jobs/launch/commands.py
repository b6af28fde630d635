"""Reading and showing run commands: shell words in, shell words out; no shell is run.

The form (SPEC J16) has already checked that a command starts with an executable; here we
only need to split it, fill in the variables the plan sets, see which launchers it uses,
and print it back.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

# A backslash at the end of a line continues it, as in a shell: the seeds print their long
# commands that way, and users paste them.
_CONTINUATION = re.compile(r"\\\r?\n")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_OPERATOR_CHARS = frozenset("();<>|&")
_SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
# Words that run the next word as the command ("exec mpirun ...", "env X=1 deepspeed ...").
_PREFIX_WORDS = frozenset({"exec", "env", "nohup", "time", "command"})
# shlex.quote's safe characters plus "^", which no POSIX shell treats specially: the seed's
# "-mca btl ^openib" then reads as the seed prints it.
_SAFE_WORD = re.compile(r"[\w@%+=:,./^-]+", re.ASCII)


def split_command(command: str) -> list[str]:
    """The command's words, as a POSIX shell would split them (line continuations joined).

    Raises ValueError for what a shell could not split either (an unclosed quote): the form
    should have refused it, so this is a programming error, not a user one.
    """
    try:
        argv = shlex.split(_CONTINUATION.sub("", command))
    except ValueError as error:
        raise ValueError(f"the run command cannot be split into words: {error}") from None
    if not argv:
        raise ValueError("the run command is empty")
    return argv


def expand_variables(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``$NAME`` and ``${NAME}`` replaced for the variables in ``env``, as the shell in the
    seeds' examples would (``torchrun --nnodes ${WORLD_SIZE}``, ``-np $MLP_MPI_NP``): argv is
    executed without a shell. Other references (``$HOME`` from the image) stay as typed, for
    a ``bash -c "..."`` to expand at run time."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, match.group(0))

    return [_VARIABLE.sub(substitute, word) for word in argv]


def command_words(command: str) -> frozenset[str]:
    """Basenames of the programs a command starts, looking inside ``bash -c "..."`` scripts
    (J16's way of writing several statements): ``bash -c "cd x && mpirun ..."`` gives
    ``{"bash", "cd", "mpirun"}``. Arguments are not command words: ``--deepspeed`` is not."""
    words: set[str] = set()
    _collect(_CONTINUATION.sub("", command), words, depth=0)
    return frozenset(words)


def _is_operator(token: str) -> bool:
    return bool(token) and all(char in _OPERATOR_CHARS for char in token)


def _collect(script: str, words: set[str], depth: int) -> None:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return  # unbalanced quotes inside a script: nothing we can say about it
    expecting_command = True
    skip_next = False
    for position, token in enumerate(tokens):
        if skip_next:
            skip_next = False
            continue
        if _is_operator(token):
            if "<" in token or ">" in token:
                skip_next = True  # a redirection's target is a file, not a command
            else:
                expecting_command = True
            continue
        if not expecting_command or _ASSIGNMENT.match(token) or token in _PREFIX_WORDS:
            continue
        name = token.rsplit("/", 1)[-1]
        words.add(name)
        expecting_command = False
        if name in _SHELLS and depth < 3:
            inner = _shell_script(tokens[position + 1 :])
            if inner is not None:
                _collect(inner, words, depth + 1)


def _shell_script(args: Sequence[str]) -> str | None:
    """The script of ``sh [options] -c SCRIPT``, or None when the shell runs a file."""
    has_c = False
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif _is_operator(arg):
            return None
        elif arg in ("-o", "+o"):
            skip_next = True
        elif arg.startswith("-") and not arg.startswith("--"):
            has_c = has_c or "c" in arg[1:]
        elif not arg.startswith("--"):
            return arg if has_c else None
    return None


def display_command(argv: Sequence[str], width: int | None = None) -> str:
    """``argv`` as one shell line (``shlex.join``, leaving ``^`` unquoted); with ``width``,
    wrapped with `` \\`` continuations as the seeds print commands, options with their values."""
    words = [arg if _SAFE_WORD.fullmatch(arg) else shlex.quote(arg) for arg in argv]
    if width is None:
        return " ".join(words)
    groups: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        following = words[position + 1] if position + 1 < len(words) else None
        if word.startswith("-") and following is not None and not following.startswith("-"):
            groups.append(f"{word} {following}")
            position += 2
        else:
            groups.append(word)
            position += 1
    lines: list[str] = []
    current = ""
    for group in groups:
        # 4 for the indent of continuation lines, 2 for the trailing " \".
        if current and 4 + len(current) + 1 + len(group) + 2 > width:
            lines.append(current)
            current = group
        else:
            current = f"{current} {group}" if current else group
    if current:
        lines.append(current)
    return " \\\n    ".join(lines)

"""What a shell prints, with host folders named by the job's paths, as the served logs are.

A terminal's output arrives in chunks cut anywhere: inside a UTF-8 character, or inside a
host folder's name. So the end of a chunk that could still become a host folder is held
back until the next chunk says how it goes on (or until :meth:`PathStream.flush`, which the
socket calls when no more output follows shortly: a prompt must not wait).
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping

from resources.backends.base import job_paths

QUIET_SECONDS = 0.03  # held output (a possible path) is sent after this long without more


class PathStream:
    def __init__(self, folders: Mapping[str, str]):
        self.folders = dict(folders)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.held = ""
        self.before = ""  # the last character sent: whether a path may start after it

    def feed(self, data: bytes) -> str:
        return self.feed_text(self.decoder.decode(data))

    def feed_text(self, text: str) -> str:
        """As :meth:`feed`, for output that arrives decoded already (a tool's terminal)."""
        text = self.held + text
        cut = len(text) - self._unsure(text)
        self.held = text[cut:]
        return self._named(text[:cut])

    def flush(self) -> str:
        text, self.held = self.held, ""
        return self._named(text)

    @property
    def holding(self) -> bool:
        return bool(self.held)

    def _unsure(self, text: str) -> int:
        """How many characters at the end of ``text`` may be the start of a host folder, or
        a whole one whose next character decides (``/runs/job-1`` vs ``/runs/job-12``)."""
        longest = 0
        for folder in self.folders:
            for size in range(min(len(folder), len(text)), longest, -1):
                if text.endswith(folder[:size]):
                    longest = size
                    break
        return longest

    def _named(self, text: str) -> str:
        if not text or not self.folders:
            return text
        named = job_paths(self.before + text, self.folders)
        if self.before and named.startswith(self.before):
            named = named[len(self.before) :]
        self.before = text[-1]
        return named

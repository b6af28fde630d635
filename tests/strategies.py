"""Hypothesis strategies made once and drawn from many times.

Hypothesis checks every new strategy object before its first draw. A composite or a fuzz
step that makes ``st.sampled_from([...])`` afresh on each draw pays that check every time
(a fifth of the scheduler's property tests, a tenth of the fuzz). The draws are the same.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

# One strategy per tuple of choices.
pick = functools.cache(st.sampled_from)

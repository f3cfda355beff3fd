"""How much the property tests and the long checks run: a short profile by default (the README's
test command stays within minutes on two cores), the long one with `PYPTO_TEST_LONG=1`.

    PYPTO_TEST_LONG=1 .venv/bin/python -m pytest -q -n auto

runs every hypothesis test with its long example count, the exactness suite's long profile (as
`PYPTO_EXACTNESS_LONG=1`), the memory-dependence property test's (as `PYPTO_PROPERTY_LONG=1`)
and translation validation over the whole kernel zoo.
"""

from __future__ import annotations

import os

LONG = os.environ.get("PYPTO_TEST_LONG", "").strip() not in ("", "0")


def examples(short: int, long: int) -> int:
    """A hypothesis `max_examples`: `short` by default, `long` under PYPTO_TEST_LONG=1."""
    return long if LONG else short

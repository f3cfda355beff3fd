"""Cross-validation of the static barrier check against the dynamic race detector on a fixed
corpus of random kernels (tests/passes/random_kernels.py): a kernel the dynamic detector catches
under some warp schedule must be rejected statically too (soundness); the static check's false
positives are counted and must stay rare."""

from __future__ import annotations

import pytest

from tests.passes.crossval import cross_validate, dynamic_rejects, static_rejects
from tests.passes.random_kernels import generate

CORPUS = range(0, 60)


def test_every_race_the_interpreter_finds_is_found_statically():
    report = cross_validate(CORPUS)
    assert report.dynamic_only == 0, "\n".join(report.disagreements)
    # the corpus exercises both outcomes
    assert report.both >= 15 and report.neither >= 10, report.summary()
    # few false positives (the static check is conservative only where it cannot decide)
    assert report.static_only <= 2, report.summary()


@pytest.mark.parametrize("seed", [131])
def test_regression_copy_starts_a_new_epoch(seed):
    """Seed 131: lanes of warp 1 store, an async_load (a block-level collective), then lanes of
    warp 2 store to the same element: not a race, for both checkers."""
    text = generate(seed)
    assert static_rejects(text) is None
    assert dynamic_rejects(text) is None

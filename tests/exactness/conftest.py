"""Prints the exactness suite's figures at the end of a run that included it."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ANN001
    from tests.exactness import test_exactness as t

    if t.STATS["checked"]:
        combos = {(op.name, op.dtype.name, op.result_dtype.name) for op in t.OPS}
        terminalreporter.write_line(
            f"exactness: {len(combos)} operation x dtype combinations, "
            f"{t.STATS['checked']} results compared with exact references "
            f"(profile {t.PROFILE})")

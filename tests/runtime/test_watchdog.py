"""The watchdog (docs/runtime.md#the-watchdog): a `while` loop that never ends is a
`KernelError` naming the loop's line, after `PYPTO_MAX_TRIPS` trips or the `timeout=` seconds
of a launch or a sync; a loop that ends is never stopped."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import watchdog


@pto.kernel
def spin(o, n):
    i = pto.get_global_id()
    k = 0
    while k < n:   # n > 0: never ends (k only decreases)
        k = k - 1
    pto.store(o + i, k)


@pto.kernel
def count(o, n):
    i = pto.get_global_id()
    k = 0
    while k < n:
        k = k + 1
    pto.store(o + i, k)


LOOP_LINE = next(n for n, line in enumerate(open(__file__), 1) if "never ends (k only" in line
                 and "while" in line)


def test_the_default_limit_and_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("PYPTO_MAX_TRIPS", raising=False)
    assert watchdog.max_trips() == watchdog.DEFAULT_MAX_TRIPS == 1_000_000
    monkeypatch.setenv("PYPTO_MAX_TRIPS", "2_000")
    assert watchdog.max_trips() == 2000
    monkeypatch.setenv("PYPTO_MAX_TRIPS", "-3")
    with pytest.raises(pto.UsageError, match="PYPTO_MAX_TRIPS='-3' is not a value it takes: it takes a positive"):
        watchdog.max_trips()


def test_max_trips_stops_the_loop_at_its_line_and_a_loop_below_it_runs(monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_MAX_TRIPS", "500")
    o = np.zeros(32, np.int32)
    with pytest.raises(pto.KernelError, match=r"has run 500 trips without ending") as info:
        spin[1, 32](o, 1)
    assert f"test_watchdog.py:{LOOP_LINE}:" in str(info.value)
    count[1, 32](o, 499)  # 499 trips and the exit test: within the limit
    assert np.array_equal(o, np.full(32, 499, np.int32))


def test_timeout_of_a_launch_and_of_a_sync(monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_MAX_TRIPS", str(10**12))  # only the clock stops it
    d_o = pto.empty(32, np.int32)
    with pytest.raises(pto.KernelError, match=r"time limit of 0.2 s ran out") as info:
        spin[1, 32](d_o, 1, timeout=0.2)
        pto.sync()
    assert f"test_watchdog.py:{LOOP_LINE}:" in str(info.value)
    pto.launch(spin, 1, 32, (d_o, 1))
    with pytest.raises(pto.KernelError, match=r"time limit of 0.3 s ran out"):
        pto.sync(timeout=0.3)
    pto.launch(count, 1, 32, (d_o, 1000), timeout=5)  # ends well within its limit
    assert np.array_equal(d_o.numpy(), np.full(32, 1000, np.int32))


def test_a_bad_timeout_is_a_usage_error_at_the_launch() -> None:
    with pytest.raises(pto.UsageError, match="timeout must be a positive number of seconds"):
        pto.launch(count, 1, 32, (pto.empty(32, np.int32), 3), timeout=0)
    with pytest.raises(pto.UsageError, match="timeout must be a positive number of seconds"):
        pto.sync(timeout="1")

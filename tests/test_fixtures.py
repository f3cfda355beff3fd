"""The suite's own fixtures never drop an error (tests/conftest.py): a launch that a test
never synchronised and that fails is reported as that test's failure, with the kernel's
message and where it was launched."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from tests.conftest import sync_or_fail


@pto.kernel
def writes_past_the_end(o, n):
    pto.store(o + pto.get_global_id() + n, 1.0)


def test_a_failed_unsynchronised_launch_fails_the_test() -> None:
    o = pto.alloc_tensor(64 * 4)
    pto.launch(writes_past_the_end, grid=1, block=64, args=(o, 64))  # asynchronous: queued
    with pytest.raises(pytest.fail.Exception) as failed:
        sync_or_fail("work this test launched and never synchronised")
    message = str(failed.value)
    assert message.startswith("work this test launched and never synchronised failed:")
    assert "MemoryAccessError" in message and "writes_past_the_end" in message
    assert "test_fixtures.py" in message  # the launch site, from the error's notes
    sync_or_fail("nothing left")  # the failed launch was reported once, not again
    o.free()


def test_good_work_passes_through() -> None:
    o = pto.tensor(np.zeros(4, np.float32))
    sync_or_fail("a copy")
    np.testing.assert_array_equal(o.numpy(), np.zeros(4, np.float32))

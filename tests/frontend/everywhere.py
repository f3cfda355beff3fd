"""Run a kernel through everything that reads its IR: both IR levels of the interpreter (pto
and npu, bit-identical), the debugger (stepped to the end at the pto level, and continued at
the npu level), and the cost model (both models). The outputs of every run are returned for
the test to compare with its NumPy reference; a disagreement between the runs fails here."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

import pypto as pto
import pypto.debug as dbg
from tests.kernels.conftest import NPU_PIPELINE, same_bits


def _device(args: Sequence[Any]) -> list[Any]:
    """Device copies of the arrays, with their shapes (`t[r, c]` specialises on them)."""
    return [pto.tensor(a) if isinstance(a, np.ndarray) else a for a in args]


def _run(kernel: Any, block: int, args: Sequence[Any], pipeline: str | None = None
         ) -> list[np.ndarray]:
    device = _device(args)
    options = {} if pipeline is None else {"pipeline": pipeline}
    compiled = pto.compile(kernel, args=device, block=block, **options)
    pto.launch(compiled, grid=1, block=block, args=device)
    return _host(args, device)


def _host(args: Sequence[Any], device: Sequence[Any]) -> list[np.ndarray]:
    out = []
    for a, t in zip(args, device):
        if isinstance(a, np.ndarray):
            h = np.empty_like(a)
            pto.memcpy_d2h(h, t)
            out.append(h)
    pto.sync()
    return out


def run_everywhere(kernel: Any, block: int, args: Sequence[Any]) -> list[np.ndarray]:
    """One block of `block` lanes on `args` (NumPy arrays are copied in and back): the
    outputs, the same at both levels, in the debugger and under the cost model."""
    pto_outs = _run(kernel, block, args)
    with contextlib.redirect_stdout(io.StringIO()):
        npu_outs = _run(kernel, block, args, NPU_PIPELINE)
    for index, (p, n) in enumerate(zip(pto_outs, npu_outs)):
        assert same_bits(p, n), f"output {index} differs between the pto and npu levels"
    for pipeline in ("pto-verify-barriers", None):
        device = _device(args)
        session = dbg.debug_kernel(kernel, args=device, grid=1, block=block, pipeline=pipeline,
                                   out=io.StringIO())
        if pipeline is None:
            session.continue_()
        else:
            for _ in range(100_000):
                if session.finished:
                    break
                session.step()
        assert session.finished
        for index, (p, d) in enumerate(zip(pto_outs, _host(args, device))):
            assert same_bits(p, d), f"output {index} differs in the debugger ({pipeline})"
    for model in ("fused", "table"):
        profile = pto.profile(kernel, grid=1, block=block, args=_device(args), model=model)
        assert profile.total_cycles > 0
    return pto_outs

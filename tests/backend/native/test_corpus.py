"""The exactness suite's operations and the fuzzer's generated kernels on both backends, bit
for bit (raw bytes); what the native backend does not compile is counted, never run wrong."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from pypto.exact import BFLOAT16
from tests.exactness.harness import module_for, third_dtype
from tests.exactness.ops import all_ops, random_values, restrict, specials
from tests.fuzz.fuzz import kernel_case


def _both(kernel, grid, block, arrays, scalars):
    outs = []
    for backend in ("interpreter", "native"):
        copies = [a.copy() for a in arrays]
        try:
            pto.launch(kernel, grid, block, (*copies, *scalars), backend=backend)
        except NativeUnsupported:
            return None
        outs.append(copies)
    return outs


def _bits_equal(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x.view(np.uint8), y.view(np.uint8)) for x, y in zip(a, b))


def _same_up_to_nan_payload(a: np.ndarray, b: np.ndarray) -> bool:
    """Raw bytes equal, except where both are NaN: float16 arithmetic with two NaN operands
    keeps one operand's payload (which one is the C compiler's choice in NumPy), and NumPy's
    software float16 conversions keep a signalling NaN signalling where the CPU's quiet it;
    bfloat16 (ml_dtypes: C++ float32 arithmetic) likewise picks one NaN operand's sign
    (docs/native.md#exactness; docs/language.md: a NaN result is NaN)."""
    if a.dtype.kind != "f" and a.dtype != BFLOAT16:
        return np.array_equal(a.view(np.uint8), b.view(np.uint8))
    bits = np.dtype(f"u{a.dtype.itemsize}")
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return bool(np.all((a.view(bits) == b.view(bits)) | both_nan))


def test_exactness_operations_bit_exact(tmp_path):
    rng = np.random.default_rng(29)
    compiled, skipped = [], []
    for op in all_ops():
        mod = module_for(op, tmp_path)
        special = specials(op.dtype)
        pairs = list(itertools.product(special, special))
        xs = np.array([p[0] for p in pairs] + list(random_values(op.dtype, 512, rng)),
                      dtype=op.dtype)
        ys = np.array([p[1] for p in pairs] + list(random_values(op.dtype, 512, rng)),
                      dtype=op.dtype)
        cs = random_values(third_dtype(op), xs.size, rng)
        xs, ys, cs = restrict(op, 0, xs), restrict(op, 1, ys), restrict(op, 2, cs)
        n = xs.size
        out = np.zeros(n, dtype=op.result_dtype)
        result = _both(mod.lanes, (n + 255) // 256, 256, [xs, ys, cs, out], (n,))
        if result is None:
            skipped.append(op.id)
            continue
        if {np.dtype(np.float16), BFLOAT16} & {np.dtype(op.dtype), np.dtype(op.result_dtype)}:
            assert _same_up_to_nan_payload(result[0][-1], result[1][-1]), op.id
        else:
            assert _bits_equal(*result), op.id
        compiled.append(op.id)
    print(f"native: {len(compiled)} of {len(compiled) + len(skipped)} exactness operations "
          f"compiled: {compiled}")
    assert len(compiled) >= 163  # docs/native.md: all 163


def test_fuzzer_kernels_bit_exact(tmp_path):
    compiled = skipped = 0
    for index in range(40):
        case = kernel_case(29, index)
        if case.reference is None:
            continue
        path = tmp_path / f"fuzz_native_{index}.py"
        path.write_text(case.source)
        namespace: dict = {}
        exec(compile(case.source, str(path), "exec"), namespace)  # noqa: S102
        rng = np.random.default_rng(index)
        size = 256
        if case.dtype == np.float32:
            xs, ys = (rng.uniform(-4, 4, size).astype(np.float32) for _ in range(2))
        else:
            xs, ys = (rng.integers(-1000, 1000, size).astype(np.int32) for _ in range(2))
        out = np.zeros(size, case.dtype)
        grid = (case.n + case.block - 1) // case.block
        try:
            result = _both(namespace["gen"], grid, case.block, [xs, ys, out], (case.n,))
        except pto.CompileError:
            continue  # a generated kernel the frontend rejects (the fuzzer's own test)
        if result is None:
            skipped += 1
            continue
        assert _bits_equal(*result), case.source
        compiled += 1
    print(f"native: {compiled} of {compiled + skipped} fuzzer kernels compiled")
    assert compiled >= 26  # docs/native.md: 26 of 36 (atomics with stores: refused)

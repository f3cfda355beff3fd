"""The exactness suite's operations and the fuzzer's generated kernels on both backends, bit
for bit (raw bytes); what the native backend does not compile is counted, never run wrong."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import pypto as pto
from pypto.backend.native.jit import NativeUnsupported
from pypto.exact import BFLOAT16
from tests.exactness.harness import expr_store, module_for, third_dtype
from tests.exactness.ops import Op, all_ops, random_values, restrict, specials
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


GROUP = 8
"""Exactness operations per compiled kernel: each keeps its own operands and output, so a group
checks every operation as its own kernel does, for an eighth of the compilations."""


def _group_source(ops: list[Op]) -> str:
    """One kernel applying each operation of `ops` to its own loaded operands (names renamed
    per operation: x -> x3, ...); the harness's single-operation kernel, `len(ops)` times."""
    params = ", ".join(f"pa{k}, pb{k}, pc{k}, po{k}" for k in range(len(ops)))
    lines = ["import pypto as pto", "", "", "@pto.kernel", f"def lanes({params}, n):",
             "    i = pto.get_global_id()", "    if i < n:"]
    for k, op in enumerate(ops):
        store = expr_store(op, f"po{k} + i")
        store = re.sub(r"\b([xyc])\b", lambda m, k=k: f"{m.group(1)}{k}", store)
        lines += [f"        x{k} = pto.load(pa{k} + i)", f"        y{k} = pto.load(pb{k} + i)",
                  f"        c{k} = pto.load(pc{k} + i)", f"        {store}"]
    return "\n".join(lines) + "\n"


def _operands(op: Op, rng: np.random.Generator) -> list[np.ndarray]:
    special = specials(op.dtype)
    pairs = list(itertools.product(special, special))
    xs = np.array([p[0] for p in pairs] + list(random_values(op.dtype, 512, rng)), dtype=op.dtype)
    ys = np.array([p[1] for p in pairs] + list(random_values(op.dtype, 512, rng)), dtype=op.dtype)
    cs = random_values(third_dtype(op), xs.size, rng)
    return [restrict(op, 0, xs), restrict(op, 1, ys), restrict(op, 2, cs)]


def _same_output(op: Op, a: np.ndarray, b: np.ndarray) -> bool:
    if {np.dtype(np.float16), BFLOAT16} & {np.dtype(op.dtype), np.dtype(op.result_dtype)}:
        return _same_up_to_nan_payload(a, b)
    return _bits_equal([a], [b])


def test_exactness_operations_bit_exact(tmp_path):
    """Every exactness operation on its specials (all pairs) and 512 random operands, both
    backends, raw bytes (float16/bfloat16 NaN payloads aside); operations run GROUP to a
    kernel, a refused group one by one so the count stays per operation."""
    rng = np.random.default_rng(29)
    compiled, skipped = [], []
    ops = all_ops()
    for start in range(0, len(ops), GROUP):
        group = ops[start:start + GROUP]
        operands = [_operands(op, rng) for op in group]
        n = max(x.size for x, _, _ in operands)  # shorter operand lists repeat (np.resize)
        arrays = [a for op, ins in zip(group, operands)
                  for a in (*(np.resize(v, n) for v in ins), np.zeros(n, dtype=op.result_dtype))]
        path = tmp_path / f"exact_group_{start}.py"
        path.write_text(_group_source(group))
        namespace: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
        result = _both(namespace["lanes"], (n + 255) // 256, 256, arrays, (n,))
        if result is not None:
            for k, op in enumerate(group):
                assert _same_output(op, result[0][4 * k + 3], result[1][4 * k + 3]), op.id
            compiled += [op.id for op in group]
            continue
        for op, (xs, ys, cs) in zip(group, operands):  # who in the group is refused
            out = np.zeros(xs.size, dtype=op.result_dtype)
            single = _both(module_for(op, tmp_path).lanes, (xs.size + 255) // 256, 256,
                           [xs, ys, cs, out], (xs.size,))
            if single is None:
                skipped.append(op.id)
                continue
            assert _same_output(op, single[0][-1], single[1][-1]), op.id
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

"""`pto-insert-barriers`: the repaired kernels compute the same (and the right) results, race-free
under every warp schedule; the pass is idempotent, minimal on straight-line code, keeps
locations, and reports what it cannot repair."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp

import pypto as pto
from tests.conftest import from_device, to_device
from pypto.analysis.uniformity import walk
from pypto.backend.interpreter import Executable
from pypto.dialects import pto as ptod
from pypto.errors import BarrierError, RaceError
from pypto.ir import make_context, print_ir
from pypto.diagnostics import error_op
from pypto.passes.insert_barriers import InsertBarriersPass
from pypto.passes.verify_barriers import VerifyBarriersPass
from pypto.tools.parsing import parse_module

SCHEDULES = [None, "in_order", "reverse", "random:3"]


def kernel_module(kernel: object, args: tuple[object, ...], block: object) -> ModuleOp:
    return pto.compile(kernel, args=args, block=block, pipeline="").module.clone()


def the_func(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def insert(module: ModuleOp, **options: Any) -> ModuleOp:
    InsertBarriersPass(**options).apply(make_context(), module)
    module.verify()
    return module


def count(module: ModuleOp, op_type: type) -> int:
    return sum(isinstance(op, op_type) for op in walk(the_func(module).body.block.ops))


def execute(module: ModuleOp, grid: tuple[int, int, int], block: tuple[int, int, int],
            args: Sequence[Any], **options: Any) -> list[np.ndarray]:
    """Run the kernel of `module` in the interpreter; returns the array arguments after."""
    device, tensors = to_device(args)
    pto.sync()
    Executable(the_func(module), **options).run(grid, block, device)
    return from_device(tensors)


# ---------------------------------------------------------------------------------------------
# Racy kernels (each correct in lockstep execution, which is what the author meant)
# ---------------------------------------------------------------------------------------------


@pto.kernel
def broadcast(x, out):
    """The article's pitfall: half the block stages data, everyone reads it."""
    shared = pto.alloc_local(128)
    lid = pto.get_local_id()
    base = pto.get_block_id() * 256
    if lid < 128:
        pto.store(shared + lid, pto.load(x + base + lid) * 2.0)
    pto.barrier()
    pto.store(out + base + lid, pto.load(shared + lid % 128))


def broadcast_ref(x: np.ndarray) -> np.ndarray:
    blocks = x.reshape(-1, 256)
    return np.tile(blocks[:, :128] * 2.0, 2).ravel()


@pto.kernel
def tree_sum_warp_barriers(x, partial, BLOCK: pto.constexpr, LOG2: pto.constexpr):
    """A tree reduction whose every step is under a warp barrier only."""
    tid = pto.get_local_id()
    buf = pto.alloc_local(BLOCK)
    pto.store(buf + tid, pto.load(x + pto.get_global_id()))
    pto.barrier()
    s = BLOCK // 2
    for _ in range(LOG2):
        if tid < s:
            pto.store(buf + tid, pto.load(buf + tid) + pto.load(buf + tid + s))
        pto.barrier()
        s = s // 2
    if tid == 0:
        pto.store(partial + pto.get_block_id(), pto.load(buf))


def tree_ref(x: np.ndarray, block: int) -> np.ndarray:
    buf = x.reshape(-1, block).copy()
    s = block // 2
    while s >= 1:
        buf[:, :s] = buf[:, :s] + buf[:, s:2 * s]
        s //= 2
    return buf[:, 0].copy()


@pto.kernel
def smooth(x, out, steps):
    """Repeated 3-point smoothing in L1: reads neighbours (other warps at the edges), then
    overwrites its own slot; every step reads the previous step's values."""
    lid = pto.get_local_id()
    n = pto.get_block_dim()
    buf = pto.alloc_local(256)
    pto.store(buf + lid, pto.load(x + lid))
    for _ in range(steps):
        left = pto.load(buf + (lid + n - 1) % n)
        right = pto.load(buf + (lid + 1) % n)
        mid = pto.load(buf + lid)
        pto.store(buf + lid, (left + mid + right) * 0.25)
    pto.store(out + lid, pto.load(buf + lid))


def smooth_ref(x: np.ndarray, steps: int) -> np.ndarray:
    v = x.astype(np.float32).copy()
    for _ in range(steps):
        v = ((np.roll(v, 1) + v + np.roll(v, -1)) * np.float32(0.25)).astype(np.float32)
    return v


@pto.kernel
def transpose_tile(src, dst, n):
    """32 x 32 tile transpose with a 32 x 8 block and no barrier at all."""
    tile = pto.alloc_local(32 * 33)
    tx = pto.get_local_id(0)
    ty = pto.get_local_id(1)
    for j in range(0, 32, 8):
        pto.store(tile + (ty + j) * 33 + tx, pto.load(src + (ty + j) * n + tx))
    for j in range(0, 32, 8):
        pto.store(dst + (ty + j) * n + tx, pto.load(tile + tx * 33 + ty + j))


@pto.kernel
def over_synchronised(x, out):
    """Correct, with block barriers that order nothing (same-lane reuse, back to back, at the
    end) around one that matters."""
    lid = pto.get_local_id()
    buf = pto.alloc_local(256)
    pto.store(buf + lid, pto.load(x + lid))
    pto.barrier_block()
    mine = pto.load(buf + lid)
    pto.barrier_block()
    pto.store(buf + lid, mine + 1.0)
    pto.barrier_block()
    pto.barrier_block()
    pto.store(out + lid, pto.load(buf + 255 - lid))
    pto.barrier_block()


CASES = [
    ("broadcast", broadcast, (2, 1, 1), (256, 1, 1),
     lambda rng: [rng.standard_normal(512).astype(np.float32), np.zeros(512, np.float32)],
     lambda arrays: broadcast_ref(arrays[0]), 1),
    ("tree", tree_sum_warp_barriers, (3, 1, 1), (256, 1, 1),
     lambda rng: [rng.standard_normal(768).astype(np.float32), np.zeros(3, np.float32), 256, 8],
     lambda arrays: tree_ref(arrays[0], 256), 1),
    ("smooth", smooth, (1, 1, 1), (256, 1, 1),
     lambda rng: [rng.standard_normal(256).astype(np.float32), np.zeros(256, np.float32), 5],
     lambda arrays: smooth_ref(arrays[0], 5), 1),
    ("transpose", transpose_tile, (1, 1, 1), (32, 8, 1),
     lambda rng: [rng.standard_normal((32, 32)).astype(np.float32),
                  np.zeros((32, 32), np.float32), 32],
     lambda arrays: arrays[0].T, 1),
    ("over_synchronised", over_synchronised, (1, 1, 1), (256, 1, 1),
     lambda rng: [rng.standard_normal(256).astype(np.float32), np.zeros(256, np.float32)],
     lambda arrays: (arrays[0] + np.float32(1.0))[::-1], 1),
]


def _prepare(case: tuple) -> tuple[ModuleOp, ModuleOp, list[Any], Any]:
    name, kernel, grid, block, make_args, reference, _ = case
    rng = np.random.default_rng(len(name))
    args = make_args(rng)
    compile_args = tuple(pto.alloc_tensor(a.nbytes, dtype=a.dtype) if isinstance(a, np.ndarray)
                         else a for a in args)
    before = kernel_module(kernel, compile_args, block)
    after = insert(before.clone(), block_dims=block)
    return before, after, args, reference


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_results_are_unchanged_correct_and_race_free_after_insertion(case):
    name, _, grid, block, _, _, out_index = case
    before, after, args, reference = _prepare(case)
    lockstep = execute(before, grid, block, args, race_check=False)
    expected = reference(args)
    np.testing.assert_array_equal(lockstep[out_index].reshape(expected.shape), expected)
    for schedule in SCHEDULES:
        repaired = execute(after, grid, block, args, schedule=schedule, race_check=True)
        for got, want in zip(repaired, lockstep):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} under {schedule}")


@pytest.mark.parametrize("case", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_the_racy_kernels_really_race_before_insertion(case):
    _, _, grid, block, _, _, _ = case
    before, _, args, _ = _prepare(case)
    with pytest.raises(RaceError):
        for schedule in SCHEDULES:
            execute(before, grid, block, args, schedule=schedule, race_check=True)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_insertion_is_idempotent_and_verifies(case):
    _, _, _, block, _, _, _ = case
    _, after, _, _ = _prepare(case)
    text = print_ir(after)
    again = insert(after.clone(), block_dims=block)
    assert print_ir(again) == text
    VerifyBarriersPass(block_dims=block).apply(make_context(), after)


def test_useless_block_barriers_are_removed_and_the_needed_one_kept():
    case = CASES[4]
    before, after, _, _ = _prepare(case)
    assert count(before, ptod.BarrierBlockOp) == 5
    assert count(after, ptod.BarrierBlockOp) == 1


def test_tree_needs_a_single_block_barrier_at_the_top_of_its_loop():
    before, after, _, _ = _prepare(CASES[1])
    assert count(before, ptod.BarrierBlockOp) == 0
    # One barrier before each step orders the step with the previous one and, since the loop
    # runs (8 times), the first step with the initial store: the fewest possible.
    assert count(after, ptod.BarrierBlockOp) == 1
    loop = next(op for op in walk(the_func(after).body.block.ops) if isinstance(op, scf.ForOp))
    barrier = next(op for op in loop.body.block.ops if isinstance(op, ptod.BarrierBlockOp))
    assert isinstance(barrier.next_op, scf.IfOp)


# ---------------------------------------------------------------------------------------------
# Minimality, locations, refusals
# ---------------------------------------------------------------------------------------------


def chain(n: int) -> str:
    """n exchanges in a row, each reading the previous one's writes from another warp."""
    lines = ["func.func @k(%v: f32) attributes {pto.kernel} {",
             "  %buf = pto.alloc_local : !pto.l1buf<256xf32>",
             "  %lid = pto.get_local_id 0 : i32",
             "  %c255 = arith.constant 255 : i32",
             "  %r = arith.subi %c255, %lid : i32",
             "  %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>",
             "  %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>",
             '  pto.store %v, %p : f32, !pto.ptr<f32, local> loc("k.py":1:1)']
    for i in range(n):
        lines.append(f'  %w{i} = pto.load %q : !pto.ptr<f32, local> -> f32 loc("k.py":{i + 2}:5)')
        lines.append(f'  pto.store %w{i}, %p : f32, !pto.ptr<f32, local> loc("k.py":{i + 2}:9)')
    lines += ["  func.return", "}"]
    return "\n".join(lines)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_straight_line_chain_gets_the_minimum_number_of_barriers(n):
    # each exchange is a read of the mirror slot (RAW after the previous store) and a store of
    # one's own slot (WAR after the read): 2 barriers per exchange, no fewer possible
    module, _ = parse_module(make_context(), chain(n), "k.mlir")
    insert(module)
    assert count(module, ptod.BarrierBlockOp) == 2 * n


def test_inserted_barriers_take_the_location_of_the_access_they_protect():
    module, _ = parse_module(make_context(), chain(1), "k.mlir")
    insert(module)
    ops = list(the_func(module).body.block.ops)
    for index, op in enumerate(ops):
        if isinstance(op, ptod.BarrierBlockOp):
            protected = ops[index + 1]
            assert isinstance(op.location, FileLineColLoc)
            assert op.location == protected.location


def test_an_upgraded_warp_barrier_keeps_its_own_location():
    text = chain(1).replace('  %w0 = pto.load',
                            '  pto.barrier loc("k.py":7:3)\n  %w0 = pto.load', 1)
    module, _ = parse_module(make_context(), text, "k.mlir")
    insert(module)
    barriers = [op for op in walk(the_func(module).body.block.ops)
                if isinstance(op, ptod.BarrierBlockOp)]
    assert len(barriers) == 2 and count(module, ptod.BarrierOp) == 0
    loc = barriers[0].location
    assert isinstance(loc, FileLineColLoc)
    assert (loc.filename.data, loc.line.data, loc.column.data) == ("k.py", 7, 3)


UNREPAIRABLE_DIVERGENT = """\
func.func @k(%v: f32) attributes {pto.kernel} {
  %buf = pto.alloc_local : !pto.l1buf<256xf32>
  %lid = pto.get_local_id 0 : i32
  %c64 = arith.constant 64 : i32
  %c255 = arith.constant 255 : i32
  %lo = arith.cmpi slt, %lid, %c64 : i32 loc("k.py":3:8)
  scf.if %lo {
    %p = pto.addptr %buf, %lid : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
    pto.store %v, %p : f32, !pto.ptr<f32, local> loc("k.py":4:9)
    %r = arith.subi %c64, %lid : i32
    %q = pto.addptr %buf, %r : !pto.l1buf<256xf32>, i32 -> !pto.ptr<f32, local>
    %w = pto.load %q : !pto.ptr<f32, local> -> f32 loc("k.py":5:9)
  }
  func.return
}
"""


def test_a_pair_inside_one_divergent_if_cannot_be_repaired():
    module, _ = parse_module(make_context(), UNREPAIRABLE_DIVERGENT, "k.mlir")
    with pytest.raises(BarrierError) as info:
        insert(module)
    message = info.value.bare_message
    assert message.startswith("RAW hazard on L1 buffer 'buf'")
    assert "pto-insert-barriers cannot repair this: both accesses are under the " \
           "lane-dependent condition at k.py:3:8" in message
    assert error_op(info.value).name == "pto.load"  # type: ignore[union-attr]


@pytest.mark.parametrize("text,expected", [
    ("""func.func @k(%v: f32) attributes {pto.kernel} {
  %flag = pto.alloc_local : !pto.l1buf<1xf32>
  pto.store %v, %flag : f32, !pto.l1buf<1xf32>
  func.return
}""", "in one pto.store"),
    ("""func.func @k(%g: !pto.ptr<f32, global>) attributes {pto.kernel} {
  %n = arith.constant 256 : i32
  %one = arith.constant 1 : i32
  %len = arith.constant 64 : i32
  %a = pto.alloc_local : !pto.l1buf<64xf32>
  %t = pto.async_load %a, %g, %n rows %one strides(%len, %len) : !pto.l1buf<64xf32>, !pto.ptr<f32, global>
  %v = pto.load %a : !pto.l1buf<64xf32> -> f32
  pto.wait %t
  func.return
}""", "call pto.wait(t) first"),
    ("""func.func @k() attributes {pto.kernel} {
  %lid = pto.get_local_id 0 : i32
  %c1 = arith.constant 1 : i32
  %odd = arith.andi %lid, %c1 : i32
  %c = arith.cmpi eq, %odd, %c1 : i32
  scf.if %c {
    pto.barrier_block
  }
  func.return
}""", "barrier divergence"),
])
def test_what_no_barrier_repairs_is_reported(text, expected):
    module, _ = parse_module(make_context(), text, "k.mlir")
    with pytest.raises(BarrierError, match=re.escape(expected)):
        insert(module)

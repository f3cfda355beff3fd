"""`pto-double-buffer`: the interpreter's results are bit-identical before and after the pass.

Every pipelined kernel of the zoo (tests/kernels/pipelined.py, which includes the article's
matmul) runs without any pass (`pipeline=""`: stages in program order, one buffer each) and
double-buffered with 2 and 3 stages, at trip counts 0, 1, 2, odd, not a multiple of the stage
count, always a run-time value; also under every warp schedule. The double-buffered kernels pass
`pto-verify-barriers` (in the pipelines below) and need no extra block barrier
(`pto-insert-barriers` adds none), and the race detector stays silent (it is on in every run).
The checks can fail: a wait removed from the double-buffered IR is caught statically and at
run time.
"""

from __future__ import annotations

import logging
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import scf

import pypto as pto
from pypto.backend.interpreter import Executable
from pypto.dialects import pto as dialect
from pypto.ir import print_ir
from tests.conftest import from_device, to_device
from tests.kernels.pipelined import NOT_DOUBLE_BUFFERED, PIPELINED, Case, matmul_case, matmul_tile

BEFORE = ""
"""No pass at all: the frontend's sequential pipeline."""

NO_FUSION = str(Path(__file__).resolve().parents[1] / "filecheck" / "passes" / "Inputs" /
                "fusion-none.toml")
"""A target whose firmware fuses nothing: every load stage's load is prefetched (the mechanics
of the rewrite, independent of the fusion-aware choice of what to prefetch)."""


def after(stages: int) -> str:
    return f"pto-double-buffer{{stages={stages}}},pto-allocate-l1,pto-verify-barriers"


def run(case: Case, pipeline: str | None, **options) -> np.ndarray:
    device, tensors = to_device(case.args)
    ck = pto.compile(case.kernel, args=device, block=case.block, pipeline=pipeline, **options)
    pto.launch(ck, grid=case.grid, block=case.block, args=device)
    return from_device(tensors)[case.output]


def compiled(case: Case, pipeline: str | None) -> pto.CompiledKernel:
    device, _ = to_device(case.args)
    return pto.compile(case.kernel, args=device, block=case.block, pipeline=pipeline)


def check_reference(case: Case, out: np.ndarray) -> None:
    if case.exact:
        np.testing.assert_array_equal(out, case.reference)
    else:
        np.testing.assert_allclose(out, case.reference, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", sorted(PIPELINED))
@pytest.mark.parametrize("stages,trips", [(2, 0), (2, 1), (2, 5), (3, 2), (3, 4)])
def test_zoo_kernel_bit_identical_after_double_buffering(name, stages, trips):
    case = PIPELINED[name](trips, seed=trips)
    before = run(case, BEFORE)
    check_reference(case, before)
    np.testing.assert_array_equal(run(case, after(stages)), before)


@pytest.mark.parametrize("name", sorted(PIPELINED))
@pytest.mark.parametrize("schedule", ["in_order", "reverse", "random:5"])
def test_zoo_kernel_bit_identical_under_every_warp_schedule(name, schedule):
    case = PIPELINED[name](3, seed=7)
    before = run(case, BEFORE)
    out = run(case, after(2), schedule=schedule, check_uninitialized=True)
    np.testing.assert_array_equal(out, before)


MATMULS = [
    (64, 64, 64, (64, 64, 64), np.float32),      # one trip
    (128, 64, 96, (64, 64, 32), np.float16),     # three trips (odd)
    (64, 128, 160, (64, 64, 32), np.float32),    # five trips
    (64, 64, 224, (64, 64, 32), "bfloat16"),     # seven trips
    (128, 128, 128, (32, 32, 32), np.float16),   # four trips, 16 blocks
]


@pytest.mark.parametrize("m,n,k,tile,dtype,stages", [
    *(shape + (2,) for shape in MATMULS),
    MATMULS[1] + (3,), MATMULS[4] + (3,),        # 3 trips with 3 stages, 4 with 3
    MATMULS[2] + (4,),                           # 5 trips with 4 stages
])
def test_article_matmul_bit_identical(m, n, k, tile, dtype, stages):
    if dtype == "bfloat16":
        dtype = ml_dtypes.bfloat16
    case = matmul_case(matmul_tile, m, n, k, tile, dtype, seed=m + k)
    before = run(case, BEFORE)
    check_reference(case, before)
    np.testing.assert_array_equal(run(case, after(stages)), before)


def test_fusion_rule_double_buffers_the_matmul():
    """The default target's firmware fuses the B tile's load with its MMA: the fusion-aware rule
    (`choose=fusion`, what the pass does without a launch to cost) prefetches A (two slots) and
    keeps B's load next to its MMA (one buffer), and says so. (The default pipeline costs the
    candidates and may prefetch both: tests/passes/test_double_buffer_choice.py.)"""
    ck = compiled(PIPELINED["matmul_tile"](2),
                  "pto-double-buffer{choose=fusion},pto-allocate-l1,pto-verify-barriers")
    text = ck.mlir
    assert "pto.pipeline" not in text and "pto.wait_all" not in text
    assert text.count("pto.slots = 2") == 1             # A_tile only
    loops = [op for op in ck.func.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 2                              # kernel and epilogue
    messages = [r.message for r in ck.remarks]
    assert any("2 slots for 'A_tile';" in m for m in messages)
    assert any("the load of 'B_tile'" in m and "stays next to its MMA" in m and
               "operand B" in m and "fuses it with the MMA" in m for m in messages)
    assert any("the load of 'A_tile'" in m and "is prefetched" in m for m in messages)
    offsets = sorted(op.l1_offset for op in ck.func.walk()
                     if isinstance(op, dialect.AllocLocalOp))
    assert offsets == [0, 16384, 32768]                # allocated by pto-allocate-l1


def test_without_fusion_every_load_is_prefetched():
    ck = compiled(PIPELINED["matmul_tile"](2), f'pto-double-buffer{{target="{NO_FUSION}"}},'
                                               f"pto-allocate-l1")
    assert ck.mlir.count("pto.slots = 2") == 2          # A_tile and B_tile
    assert any("2 slots for 'A_tile', 'B_tile'" in r.message for r in ck.remarks)


@pytest.mark.parametrize("name", sorted(set(PIPELINED) - set(NOT_DOUBLE_BUFFERED)))
@pytest.mark.parametrize("stages", [2, 3])
def test_no_block_barrier_needed_between_slots(name, stages):
    """pto-insert-barriers on the double-buffered kernel inserts nothing: the slots are proven
    disjoint (a barrier would be needed if the analysis could not tell them apart)."""
    case = PIPELINED[name](3)
    plain = compiled(case, f"pto-double-buffer{{stages={stages}}}")
    repaired = compiled(case, f"pto-double-buffer{{stages={stages}}},pto-insert-barriers")
    count = lambda ck: ck.mlir.count("pto.barrier_block")  # noqa: E731
    assert count(repaired) <= count(plain)  # it may drop redundant ones, never add
    assert "pto.slots" in plain.mlir


@pytest.mark.parametrize("name,reason", sorted(NOT_DOUBLE_BUFFERED.items()))
def test_refused_loop_is_left_unchanged_with_a_remark(name, reason, caplog):
    case = PIPELINED[name](2)
    case.kernel.clear_cache()  # compile afresh: remarks are logged when the passes run
    with caplog.at_level(logging.INFO, logger="pypto"):
        ck = compiled(case, None)
    assert "pto.pipeline" in ck.mlir and "pto.slots" not in ck.mlir
    remarks = [r for r in ck.remarks if "left as it is" in r.message]
    assert len(remarks) == 1 and reason in remarks[0].message
    assert remarks[0].location is not None and "pipelined.py" in remarks[0].location
    assert any(reason in record.getMessage() for record in caplog.records)


def test_stages_one_leaves_loops_alone():
    case = PIPELINED["matmul_tile"](2)
    # the kernels are the same; only the modules' pto.passes records differ
    assert print_ir(compiled(case, "pto-double-buffer{stages=1}").func) == \
        print_ir(compiled(case, "").func)


def test_fewer_stages_when_l1_would_overflow():
    case = PIPELINED["matmul_tile"](3)                # C 16 KiB, A and B 8 KiB per slot
    pass_ = f'pto-double-buffer{{stages=3 l1-bytes=49152 target="{NO_FUSION}"}}'
    ck = compiled(case, pass_ + ",pto-allocate-l1{l1-bytes=49152}")
    assert ck.mlir.count("pto.slots = 2") == 2
    assert any("requested 3 stages, only 2 fit in 48 KiB of L1 (3 stages need 64 KiB)"
               in r.message for r in ck.remarks)
    np.testing.assert_array_equal(run(case, pass_), run(case, BEFORE))


def test_single_buffered_when_not_even_two_stages_fit():
    """The fusion-aware default (the pass run without a coster: no cost model installed)
    prefetches both tiles on a firmware without fusion; that does not fit 40 KiB, and the loop
    stays single-buffered."""
    from pypto.diagnostics import capture_diagnostics
    from pypto.passes.double_buffer import DoubleBufferPass

    case = PIPELINED["matmul_tile"](3)
    module = compiled(case, "").module.clone()
    messages: list[str] = []
    with capture_diagnostics(lambda d: messages.append(d.message)):
        DoubleBufferPass(l1_bytes=40960, target=NO_FUSION,
                         block_dims=(case.block, 1, 1)).apply(None, module)  # type: ignore
    text = print_ir(module)
    assert "pto.pipeline" in text and "pto.slots" not in text
    assert any("requested 2 stages, only 1 fits in 40 KiB of L1 (2 stages need 48 KiB); the "
               "loop stays single-buffered" in m for m in messages)


def test_the_model_finds_the_schedule_that_fits():
    """Under `pto.compile` the pass costs every schedule that fits: in 40 KiB one tile gets two
    slots and the other stays in its own iteration; the results are the sequential kernel's."""
    case = PIPELINED["matmul_tile"](3)
    pass_ = f'pto-double-buffer{{l1-bytes=40960 target="{NO_FUSION}"}}'
    ck = compiled(case, pass_)
    assert "pto.pipeline" not in ck.mlir and ck.mlir.count("pto.slots = 2") == 1
    assert any("chose prefetch" in r.message and "in its own iteration" in r.message
               for r in ck.remarks)
    np.testing.assert_array_equal(run(case, pass_), run(case, BEFORE))


def _drop_first_wait(ck: pto.CompiledKernel) -> None:
    kernel_loop = next(op for op in ck.func.walk() if isinstance(op, scf.ForOp))
    wait = next(op for op in kernel_loop.walk() if isinstance(op, dialect.WaitOp))
    wait.detach()
    wait.erase()


@pytest.mark.parametrize("stages", [2, 3])
def test_a_missing_wait_in_the_double_buffered_loop_is_caught(stages):
    """The checks that pass above can fail: without the wait on the slot's token, the static
    check reports the in-flight read and the interpreter raises a RaceError."""
    from pypto.passes.verify_barriers import VerifyBarriersPass
    from xdsl.dialects.builtin import ModuleOp

    case = PIPELINED["pipelined_scale"](4)
    ck = compiled(case, f"pto-double-buffer{{stages={stages}}}")
    case.kernel.clear_cache()  # this compiled kernel is about to be broken: no one else gets it
    _drop_first_wait(ck)
    with pytest.raises(pto.BarrierError, match="still writing it"):
        VerifyBarriersPass(block_size=case.block).apply(None, ck.module)  # type: ignore[arg-type]
    assert isinstance(ck.module, ModuleOp)
    ck.executable = Executable(ck.func, target=ck.target)
    device, tensors = to_device(case.args)
    with pytest.raises(pto.RaceError, match="in flight"):
        pto.launch(ck, grid=case.grid, block=case.block, args=device)
        from_device(tensors)


def _issue_order(pipeline: str, trips: int) -> list[tuple[int, int]]:
    """Run the matmul with a Trace; for each mma (k-step j, in order): how many copies had been
    issued and how many waited for before it."""
    from pypto.backend.interpreter.instruments import Trace

    case = PIPELINED["matmul_tile"](trips)
    device, tensors = to_device(case.args)
    pto.sync()  # the uploads are queued on the stream; the executable runs right now
    ck = pto.compile(case.kernel, args=device, block=case.block, pipeline=pipeline)
    trace = Trace()
    ck.executable.run((*case.grid, 1), (case.block, 1, 1), device, instrument=trace)
    check_reference(case, from_device(tensors)[case.output])
    classes = trace.block_classes()
    assert len(classes) == 1  # every block runs the same stream
    table = ck.executable.op_table
    issued = waited = 0
    order = []
    for event in classes[0][1]:
        if event.kind == "issue":
            issued += 1
        elif event.kind == "wait":
            waited += 1
        elif table[event.op_id].name == "pto.mma":
            order.append((issued, waited))
    return order


def test_trace_shows_the_next_tiles_loading_during_the_mma():
    """What the pass is for, seen in the interpreter's event trace: sequentially, the mma of
    k-step j runs when the two loads of steps 0..j are issued and all waited for; double-
    buffered (every load prefetched: a firmware without fusion), the loads of step j + 1 are
    already issued (and not waited for) when it runs."""
    trips = 4
    sequential = _issue_order("", trips)
    assert sequential == [(2 * (j + 1), 2 * (j + 1)) for j in range(trips)]
    overlapped = _issue_order(f'pto-double-buffer{{target="{NO_FUSION}"}}', trips)
    expected = [(2 * min(j + 2, trips), 2 * (j + 1)) for j in range(trips)]
    assert overlapped == expected
    assert all(i > w for i, w in overlapped[:-1])   # copies in flight during every mma but the last


def test_fusion_aware_double_buffering_cannot_overlap_a_copy_with_a_fused_mma():
    """The fusion-aware schedule (`choose=fusion`) on the default target: B's load stays in its
    k-step, right before the waits in front of its mma, so the program order is the sequential
    one (A, B, wait, wait, mma per step); what the pass changes is the slot of the next A tile.
    But a fused LOAD_MMA keeps the wait it absorbed (docs/cost-model.md#the-machine-the-engine-models):
    the front end issues the next A copy only once B has landed, when the streamed MMA is
    done, so in the firmware's cost model no copy of A overlaps a LOAD_MMA, as single-buffered
    (the copy waits for the mma to release the one A buffer). Which is why the default
    pipeline, choosing by the model, prefetches both tiles here: next steps' copies run during
    its unfused MMAs."""
    trips = 4
    fusion = "pto-double-buffer{choose=fusion},pto-allocate-l1,pto-verify-barriers"
    assert _issue_order(fusion, trips) == [(2 * (j + 1), 2 * (j + 1)) for j in range(trips)]
    case = PIPELINED["matmul_tile"](trips)
    device, _ = to_device(case.args)

    def overlapping(pipeline: str | None, inst: str) -> int:
        prof = pto.profile(case.kernel, grid=case.grid, block=case.block, args=device,
                           model="fused", pipeline=pipeline)
        copies = [e for e in prof.timeline if e.inst == "COPY_IN"]
        mmas = [e for e in prof.timeline if e.inst == inst and e.pipe == "CUBE"]
        assert len(mmas) == trips  # every B load fused (LOAD_MMA), or none (MMA)
        return sum(any(c.cycle < m.end and m.cycle < c.end for m in mmas) for c in copies)

    assert overlapping(fusion, "LOAD_MMA") == 0
    single = "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma"
    assert overlapping(single, "LOAD_MMA") == 0
    assert overlapping(None, "MMA") > 0

"""One launch-shape value (`pypto.backend.launch_shape.LaunchShape`, also
`pto.runtime.LaunchShape`) made where every entry point that runs a kernel takes its grid and
block: `pto.launch`, `kernel[grid, block]`, `pto.compile` (its block), `pto.profile`,
`dbg.debug_kernel` (tests/debug), `pto.autotune`, `pypto-opt --emit=cost|timeline|trace`,
`pypto-opt --validate` (issue 22: profile and the debugger skipped the check: an OverflowError,
or minutes of simulation; issue 28: one value, one wording)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.launch_shape import MAX_LANES, LaunchShape
from pypto.backend.targets import default_target
from pypto.tools.opt import main as opt_main

TOO_MANY = [((2**31 - 1), 1024), ((2**16, 2**15), 1024), (2**31, 1), ((1, 2**31), 1),
            ((2**16, 2**16), 1)]
"""Launches whose lane ids do not fit in int32."""


@pto.kernel
def fill(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, 1.0)


def test_the_shared_check():
    target = default_target()
    shape = LaunchShape.of(4, (32, 2), target=target)
    assert (shape.grid, shape.block) == ((4, 1, 1), (32, 2, 1))
    assert (shape.block_lanes, shape.blocks, shape.lanes) == (64, 4, 256)
    big = LaunchShape.of((2**31 // 1024, 1), 1024)
    assert (big.grid, big.block, big.lanes) == ((2**21, 1, 1), (1024, 1, 1), 2**31)
    assert pto.runtime.LaunchShape is LaunchShape  # for the autotuner & co
    for grid, block in TOO_MANY:
        with pytest.raises(pto.LaunchError, match="2\\^31"):
            LaunchShape.of(grid, block, kernel="k")
    with pytest.raises(pto.LaunchError, match="max_block_lanes"):
        LaunchShape.of(1, 2048, target=target)
    with pytest.raises(pto.LaunchError, match="max_block_lanes"):
        LaunchShape.of(1, 2048).fits(target)  # the runtime learns the target later
    for bad in (0, -1, 1.5, "2", None, (1, 1, 1, 1), (), True, 4.0, (4.0,), np.float64(2)):
        with pytest.raises(pto.LaunchError, match="my launch: grid"):
            LaunchShape.of(bad, 1, what="my launch")
    assert MAX_LANES == 2**31


@pytest.mark.parametrize("given, expected", [
    (4, (4, 1, 1)), ((4,), (4, 1, 1)), ((4, 2), (4, 2, 1)), ([4, 2, 3], (4, 2, 3)),
    (np.int64(5), (5, 1, 1)), ((np.int32(2), 3), (2, 3, 1)),
])
def test_dims_are_padded_to_three(given, expected):
    for shape in (LaunchShape.of(given, 1), LaunchShape.of(given, 1)):  # (the memo's too)
        assert shape.grid == expected and all(type(d) is int for d in shape.grid)


def test_a_float_grid_never_takes_the_memoised_int_shape():
    assert LaunchShape.of(4, 32).grid == (4, 1, 1)
    for bad in (4.0, (4.0,), (4, 32.0)):
        with pytest.raises(pto.LaunchError, match="must be an int"):
            LaunchShape.of(bad, 32)


def test_one_wording_everywhere():
    """pto.launch, kernel[grid, block], pto.compile, pto.profile and the autotuner's record
    word a bad dimension the same way: "<where>: grid=<value>: the x dimension must be ..."."""
    o = pto.alloc_tensor(256)
    expected = "grid=0: the x dimension must be positive, got 0"
    for call in (lambda: pto.launch(fill, grid=0, block=64, args=(o, 64)),
                 lambda: fill[0, 64](o, 64),
                 lambda: pto.profile(fill, grid=0, block=64, args=(o, 64))):
        with pytest.raises(pto.LaunchError) as err:
            call()
        assert expected in str(err.value)
    with pytest.raises(pto.LaunchError,
                       match="pto.compile of kernel 'fill': block=0: the x dimension must be "
                             "positive, got 0"):
        pto.compile(fill, args=(o, 64), block=0)
    o.free()


@pytest.mark.parametrize("grid, block", TOO_MANY)
def test_launch_and_profile_refuse_at_once(grid, block):
    o = pto.alloc_tensor(256)
    with pytest.raises(pto.LaunchError, match="launch of kernel 'fill'"):
        pto.launch(fill, grid=grid, block=block, args=(o, 64))
    with pytest.raises(pto.LaunchError, match="pto.profile of kernel 'fill'"):
        pto.profile(fill, grid=grid, block=block, args=(o, 64))
    o.free()


def test_profile_checks_the_block_against_the_target():
    o = pto.alloc_tensor(256)
    with pytest.raises(pto.LaunchError, match="max_block_lanes"):
        pto.profile(fill, grid=1, block=2048, args=(o, 64))
    o.free()


KERNEL = """\
func.func @k(%p: !pto.ptr<f32, global>, %ntiles: i32) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %q = pto.addptr %p, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %q : !pto.ptr<f32, global> -> f32
  pto.store %v, %q : f32, !pto.ptr<f32, global>
  func.return
}
"""


@pytest.mark.parametrize("argv, expected", [
    (["--emit=cost", "--grid", "2147483648"], "--grid/--block of kernel 'k': grid=(2147483648, "
                                              "1, 1) block=(1, 1, 1): the x dimension must be "
                                              "below 2^31"),
    (["--emit=trace", "--grid", "65536,32768", "--block", "1024"], "lanes in all"),
    (["--emit=timeline", "--block", "2048"], "max_block_lanes"),
    (["--validate", "--validate-block", "2000000000"], "--validate-block"),
    (["--validate", "--validate-block", "4096"], "max_block_lanes"),
])
def test_pypto_opt_checks_the_launch_of_its_runs(tmp_path, capsys, argv, expected):
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    assert opt_main([str(path), *argv]) == 1
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert expected in first and "ntiles" not in first and "Traceback" not in err, err

"""One launch-shape validation (`pypto.backend.launch_shape.check_launch_shape`, also
`pto.runtime.check_launch_shape`) for every entry point that runs a kernel: `pto.launch`,
`pto.profile`, `dbg.debug_kernel` (tests/debug), `pypto-opt --emit=cost|timeline|trace`,
`pypto-opt --validate`, and `Executable.run`, where they all end (issue 22: profile and the
debugger skipped it: an OverflowError, or minutes of simulation)."""

from __future__ import annotations

import numpy as np
import pytest

import pypto as pto
from pypto.backend.interpreter import Executable
from pypto.backend.launch_shape import MAX_LANES, check_launch_shape
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
    assert check_launch_shape(4, (32, 2), target=target) == ((4, 1, 1), (32, 2, 1))
    assert check_launch_shape((2**31 // 1024, 1), 1024) == ((2**21, 1, 1), (1024, 1, 1))
    assert pto.runtime.check_launch_shape is check_launch_shape  # for the autotuner & co
    for grid, block in TOO_MANY:
        with pytest.raises(pto.LaunchError, match="2\\^31"):
            check_launch_shape(grid, block, kernel="k")
    with pytest.raises(pto.LaunchError, match="max_block_lanes"):
        check_launch_shape(1, 2048, target=target)
    for bad in (0, -1, 1.5, "2", None, (1, 1, 1, 1), (), True):
        with pytest.raises(pto.LaunchError, match="my launch: grid"):
            check_launch_shape(bad, 1, what="my launch")
    assert MAX_LANES == 2**31


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


def test_the_executor_checks_every_new_shape():
    o = pto.alloc_tensor(256)
    compiled = pto.compile(fill, args=(o, 64), block=64)
    exe: Executable = compiled.executable
    for grid, block in TOO_MANY:
        with pytest.raises(pto.LaunchError, match="kernel 'fill'"):
            grid3 = ((*grid, 1, 1) if isinstance(grid, tuple) else (grid, 1, 1))[:3]
            exe.run(grid3, (block, 1, 1), (o, 64))
    exe.run((1, 1, 1), (64, 1, 1), (o, 64))  # and runs a good one
    out = np.empty(64, np.float32)
    pto.memcpy_d2h(out, o)
    assert (out == 1).all()
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

"""`python -m pypto.debug SCRIPT.py:KERNEL [options] [-- script arguments]`.

Runs SCRIPT until its first launch of KERNEL, takes that launch's tensors, grid and block, and
opens the debugger on it (see repl.py for the commands, docs/debugging.md for a session).
"""

from __future__ import annotations

import argparse
import sys

from pypto.debug import debug_kernel
from pypto.debug.repl import run_repl
from pypto.debug.script import capture_launch, parse_target
from pypto.errors import PtoError
from pypto.compiler import check_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pypto.debug",
        description="Step a pypto kernel one PTO instruction at a time. The script runs until "
                    "its first launch of KERNEL; that launch's tensors, grid and block are "
                    "debugged.")
    parser.add_argument("target", metavar="SCRIPT.py:KERNEL")
    parser.add_argument("--block-id", type=int, default=0,
                        help="linear id of the block to debug (default 0)")
    parser.add_argument("--warp", type=int, default=None, help="focus one warp of the block")
    parser.add_argument("--schedule", default=None,
                        help="run the block's warps one after another: in_order, reverse, "
                             "random:SEED (default: lockstep)")
    parser.add_argument("--pipeline", default=None,
                        help="passes to run before debugging (default: the npu level when "
                             "available, see docs/debugging.md)")
    parser.add_argument("--per-lane", action="store_true",
                        help="one trace line per lane instead of folded lane ranges")
    parser.add_argument("script_args", nargs="*", help="arguments for the script (after --)")
    ns = parser.parse_args(argv)
    try:
        check_settings()  # every PYPTO_* setting, before the script runs (pypto/settings.py)
        path, kernel_name = parse_target(ns.target)
        launch = capture_launch(path, kernel_name, ns.script_args)
        session = debug_kernel(launch.kernel, args=launch.args, grid=launch.grid,
                               block=launch.block, pipeline=ns.pipeline, block_id=ns.block_id,
                               warp=ns.warp, schedule=ns.schedule, fold=not ns.per_lane,
                               names=launch.names, out=sys.stdout)
    except PtoError as exc:
        print(f"pypto.debug: error: {exc}", file=sys.stderr)
        return 1
    banner = (f"pypto debugger: kernel '{kernel_name}' as launched at {launch.site} "
              f"(grid={session.grid}, block={session.block}); debugging block "
              f"{session.block_coords}. Type 'help' for the commands.")
    run_repl(session, banner)
    return 0


if __name__ == "__main__":
    sys.exit(main())

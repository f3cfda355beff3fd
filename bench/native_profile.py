"""Where a zoo kernel's native launches spend their time: a `perf record` profile of the steady state.

For each zoo kernel (tests/kernels/zoo.py) chosen with --only: a child process compiles it
natively, warms it up, and only then turns `perf record -e cpu-clock` on (perf's control fifo), so
the compile is not in the profile; it then runs `launch + sync` for --seconds. The JIT's code is
named through PYPTO_PERF_MAP=on (docs/native.md#profiling-native-code). Printed per kernel: the
mean launch time, the share of samples per place (native code, BLAS, libc, NumPy, Python, the OS
kernel, other), and the hottest symbols; with --asm N, the N most sampled instructions of the
native code, disassembled (objdump) from a copy of the JIT's memory. One line per figure.

Needs Linux `perf` with the cpu-clock software event (hardware counters are not needed).
Run:  python bench/native_profile.py --only "gemm smem;bitonic" [--seconds 3] [--top 6]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLACES = (  # (place, test on perf's "dso" column or symbol), first match wins
    ("native code", lambda dso, sym: sym.startswith("pypto:") or dso.startswith("[JIT]")
     or dso.startswith("perf-")),
    ("BLAS", lambda dso, sym: "blas" in dso),
    ("libc", lambda dso, sym: dso.startswith("libc")),
    ("NumPy", lambda dso, sym: "_multiarray" in dso or "numpy" in dso),
    ("Python", lambda dso, sym: "python" in dso),
    ("OS kernel", lambda dso, sym: "kernel" in dso),
)


def child(name: str, seconds: float, ctl: str, ack: str) -> None:
    """Runs in the profiled process: compile and warm up with perf off, then launch + sync."""
    import numpy as np

    import pypto as pto
    from tests.kernels.zoo import cases

    case = next(c for c in cases("full") if c.name.startswith(name))
    host = case.inputs(np.random.default_rng(1))
    tensors = {k: pto.alloc_tensor(a.nbytes, dtype=a.dtype) for k, a in host.items()}
    args = case.lead + tuple(tensors.values()) + tuple(case.scalars(host))
    kernel = pto.compile(case.kernel, args=args, block=case.block, race_check=False)
    for k, a in host.items():
        pto.memcpy_h2d(tensors[k], a)

    def launch() -> None:
        pto.launch(kernel, grid=case.grid, block=case.block, args=args, backend="native")
        pto.sync()

    for _ in range(3):
        launch()
    with open(ctl, "w") as c, open(ack) as a:
        c.write("enable\n")
        c.flush()
        a.readline()
        n, t0 = 0, time.process_time()
        while time.process_time() - t0 < seconds:
            launch()
            n += 1
        spent = time.process_time() - t0
        c.write("disable\n")
        c.flush()
        a.readline()
    dump_code(os.path.dirname(ctl))
    print(f"{case.name}\t{spent / n * 1e3:.3f}\t{n}")


def dump_code(folder: str) -> None:
    """Copies the JIT's code (the functions perf's map names) into `folder`, one file per
    function `code-<start hex>-<size>`, for the parent to disassemble (--asm)."""
    import ctypes

    with open(f"/tmp/perf-{os.getpid()}.map") as f:
        for line in f:
            start, size, _ = line.rstrip("\n").split(" ", 2)
            code = ctypes.string_at(int(start, 16), int(size, 16))
            with open(os.path.join(folder, f"code-{start}-{len(code)}"), "wb") as out:
                out.write(code)


def place(dso: str, sym: str) -> str:
    return next((p for p, test in PLACES if test(dso, sym)), "other")


def hottest_instructions(data: str, folder: str, count: int) -> list[str]:
    """The `count` most sampled instructions of the JIT's code, in address order (a hot loop
    reads as one run), each with its share of all samples and its disassembly (objdump). A
    sample's address is often the instruction after the one that waited (skid): read the line
    above a hot one too."""
    ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True,
                         text=True).stdout.split()
    hits: dict[int, int] = {}
    for ip in ips:
        hits[int(ip, 16)] = hits.get(int(ip, 16), 0) + 1
    text: dict[int, str] = {}
    for file in os.listdir(folder):
        if not file.startswith("code-"):
            continue
        start = int(file.split("-")[1], 16)
        dis = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64",
                              "--no-show-raw-insn", f"--adjust-vma={start:#x}",
                              os.path.join(folder, file)], capture_output=True, text=True).stdout
        for line in dis.splitlines():
            head, _, ins = line.partition(":\t")
            if ins and head.strip():
                try:
                    text[int(head.strip(), 16)] = ins.strip()
                except ValueError:
                    pass
    hot = sorted((a for a in hits if a in text), key=lambda a: -hits[a])[:count]
    total = max(len(ips), 1)
    return [f"{a:x}  {100 * hits[a] / total:5.1f}%  {text[a]}" for a in sorted(hot)]


def profile(name: str, seconds: float, top: int, asm: int = 0) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctl, ack, data = (os.path.join(tmp, n) for n in ("ctl", "ack", "perf.data"))
        os.mkfifo(ctl)
        os.mkfifo(ack)
        env = dict(os.environ, PYPTO_PERF_MAP="on", OPENBLAS_NUM_THREADS="1")
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-D", "-1",
               f"--control=fifo:{ctl},{ack}", "-o", data, "--", sys.executable, __file__,
               "--child", name, "--seconds", str(seconds), "--ctl", ctl, "--ack", ack]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"# {name}: the profiled run failed: {run.stderr.strip()[-400:]}")
            return
        kname, ms, n = run.stdout.strip().splitlines()[-1].split("\t")
        rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                              "--sort", "dso,sym", "-F", "overhead,dso,sym"],
                             capture_output=True, text=True).stdout
        hottest = hottest_instructions(data, tmp, asm) if asm else []
    rows = []
    for line in rep.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].endswith("%"):
            continue
        sym = parts[2].split("] ", 1)[-1].strip()
        rows.append((float(parts[0][:-1]), parts[1], sym))
    rows.sort(key=lambda r: -r[0])
    shares: dict[str, float] = {}
    for pct, dso, sym in rows:
        shares[place(dso, sym)] = shares.get(place(dso, sym), 0.0) + pct
    print(f"{kname}: {ms} ms per launch + sync (cpu clock, {n} launches)")
    print(f"{kname}: " + ", ".join(f"{p} {v:.0f}%" for p, v in
                                   sorted(shares.items(), key=lambda kv: -kv[1])))
    for pct, dso, sym in rows[:top]:
        print(f"{kname}:   {pct:5.1f}%  {dso}  {sym[:90]}")
    for line in hottest:
        print(f"{kname}:     {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help='";"-separated zoo name prefixes')
    parser.add_argument("--seconds", type=float, default=3.0, help="profiled CPU seconds")
    parser.add_argument("--top", type=int, default=6, help="hottest symbols shown")
    parser.add_argument("--asm", type=int, default=0,
                        help="also the N most sampled instructions of the native code")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--ctl", help=argparse.SUPPRESS)
    parser.add_argument("--ack", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.seconds, opts.ctl, opts.ack)
        return
    names = [s.strip() for s in opts.only.split(";") if s.strip()]
    if not names:
        parser.error("--only NAME[;NAME...]: which zoo kernels (bench/zoo.py lists them)")
    print("# native launches profiled with perf record -e cpu-clock (steady state, compile "
          "excluded); shares are of all samples in the process")
    for name in names:
        profile(name, opts.seconds, opts.top, opts.asm)


if __name__ == "__main__":
    main()

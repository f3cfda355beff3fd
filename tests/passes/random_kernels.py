"""Random small kernels for cross-validating the static and the dynamic barrier checkers.

Each kernel is `pto` IR text: one or two L1 buffers, per-lane loads and stores at lane-dependent
indices (`lid`, `lid ^ 1`, `lid + 32`, `lid // 32 * 32 + k`, `(lid * 3) % N`, a constant, ...),
branches on lane conditions, uniform loops, warp and block barriers, and async copies with or
without their wait. Barriers and tile instructions are only placed in uniform control flow (a
divergent one is a different, already covered, error).

Run `python -m tests.passes.random_kernels --count 500` for the agreement report (the numbers in
docs/barriers.md come from it).
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

N = 128  # elements per L1 buffer (indices are taken modulo N)

INDEX_FORMS = ["lid", "lid ^ 1", "lid + 32", "lid // 32 * 32 + 5", "lid * 3", "7", "lid + 1",
               "lid // 2", "127 - lid"]
CONDITIONS = ["lid < 64", "lid < 16", "lid % 2 == 0", "lid >= 32", "blk < 4"]


@dataclass
class Gen:
    rng: random.Random
    lines: list[str] = field(default_factory=list)
    counter: int = 0
    depth: int = 1

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def emit(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def const(self, value: int, ty: str = "i32") -> str:
        v = self.fresh()
        self.emit(f"{v} = arith.constant {value} : {ty}")
        return v

    def index(self, form: str) -> str:
        """Emit `form` mod N as an i32 value."""
        lid = "%lid"
        if form == "lid":
            v = lid
        elif form == "lid ^ 1":
            v = self.fresh()
            self.emit(f"{v} = arith.xori {lid}, {self.const(1)} : i32")
        elif form == "lid + 32":
            v = self.fresh()
            self.emit(f"{v} = arith.addi {lid}, {self.const(32)} : i32")
        elif form == "lid + 1":
            v = self.fresh()
            self.emit(f"{v} = arith.addi {lid}, {self.const(1)} : i32")
        elif form == "lid // 32 * 32 + 5":
            q = self.fresh()
            self.emit(f"{q} = arith.floordivsi {lid}, {self.const(32)} : i32")
            m = self.fresh()
            self.emit(f"{m} = arith.muli {q}, {self.const(32)} : i32")
            v = self.fresh()
            self.emit(f"{v} = arith.addi {m}, {self.const(5)} : i32")
        elif form == "lid * 3":
            v = self.fresh()
            self.emit(f"{v} = arith.muli {lid}, {self.const(3)} : i32")
        elif form == "lid // 2":
            v = self.fresh()
            self.emit(f"{v} = arith.floordivsi {lid}, {self.const(2)} : i32")
        elif form == "127 - lid":
            v = self.fresh()
            self.emit(f"{v} = arith.subi {self.const(127)}, {lid} : i32")
        else:
            v = self.const(int(form))
        r = self.fresh()
        self.emit(f"{r} = arith.remsi {v}, {self.const(N)} : i32")
        return r

    def condition(self) -> tuple[str, str]:
        """A branch condition and its source form."""
        text = self.rng.choice(CONDITIONS)
        lhs, op, rhs = text.split()[0], text.split()[1], text.split()[2]
        if text == "lid % 2 == 0":
            m = self.fresh()
            self.emit(f"{m} = arith.remsi %lid, {self.const(2)} : i32")
            c = self.fresh()
            self.emit(f"{c} = arith.cmpi eq, {m}, {self.const(0)} : i32")
            return c, text
        pred = {"<": "slt", ">=": "sge"}[op]
        c = self.fresh()
        self.emit(f"{c} = arith.cmpi {pred}, %{lhs}, {self.const(int(rhs))} : i32")
        return c, text

    def access(self, bufs: list[str]) -> None:
        buf = self.rng.choice(bufs)
        idx = self.index(self.rng.choice(INDEX_FORMS))
        p = self.fresh()
        self.emit(f"{p} = pto.addptr {buf}, {idx} : !pto.l1buf<{N}xf32>, i32 -> "
                  f"!pto.ptr<f32, local>")
        if self.rng.random() < 0.5:
            v = self.fresh()
            self.emit(f"{v} = pto.load {p} : !pto.ptr<f32, local> -> f32")
            self.emit(f"pto.store {v}, %out_p : f32, !pto.ptr<f32, global>")
        else:
            self.emit(f"pto.store %lidf, {p} : f32, !pto.ptr<f32, local>")

    def statements(self, bufs: list[str], budget: int, uniform: bool,
                   warp_uniform: bool = True) -> None:
        for _ in range(budget):
            r = self.rng.random()
            if r < 0.45:
                self.access(bufs)
            elif r < 0.60 and warp_uniform:
                self.emit("pto.barrier")
            elif r < 0.72 and uniform:
                self.emit("pto.barrier_block")
            elif r < 0.82 and self.depth < 3:
                c, text = self.condition()
                lane_dependent = "blk" not in text
                sub_warp = text in ("lid < 16", "lid % 2 == 0")
                self.emit(f"scf.if {c} {{")
                self.depth += 1
                self.statements(bufs, self.rng.randint(1, 3), uniform and not lane_dependent,
                                warp_uniform and not sub_warp)
                self.depth -= 1
                self.emit("}")
            elif r < 0.90 and self.depth < 3 and uniform:
                lo, hi, st = self.const(0), self.const(self.rng.randint(1, 3)), self.const(1)
                iv = self.fresh()
                self.emit(f"scf.for {iv} = {lo} to {hi} step {st} : i32 {{")
                self.depth += 1
                self.statements(bufs, self.rng.randint(1, 3), uniform, warp_uniform)
                self.depth -= 1
                self.emit("}")
            elif uniform:
                self.async_copy(bufs)
            else:
                self.access(bufs)

    def async_copy(self, bufs: list[str]) -> None:
        buf = self.rng.choice(bufs)
        nbytes, one, n = self.const(N * 4), self.const(1), self.const(N)
        tok = self.fresh()
        self.emit(f"{tok} = pto.async_load {buf}, %src, {nbytes} rows {one} strides({n}, {n}) : "
                  f"!pto.l1buf<{N}xf32>, !pto.ptr<f32, global>")
        if self.rng.random() < 0.3:
            self.access(bufs)  # maybe touching the in-flight destination
        if self.rng.random() < 0.8:
            self.emit(f"pto.wait {tok}")


def generate(seed: int) -> str:
    """IR text of random kernel number `seed` (`@k(%src, %out)`, block size 128 expected)."""
    rng = random.Random(seed)
    g = Gen(rng)
    g.emit("%lid = pto.get_local_id 0 : i32")
    g.emit("%blk = pto.get_block_id 0 : i32")
    g.emit("%lidf = arith.sitofp %lid : i32 to f32")
    g.emit("%gid = pto.get_global_id 0 : i32")
    g.emit("%out_p = pto.addptr %out, %gid : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>")
    bufs = []
    for b in range(rng.randint(1, 2)):
        name = f"%buf{b}"
        g.emit(f"{name} = pto.alloc_local : !pto.l1buf<{N}xf32>")
        zero, count = g.const(0.0, "f32"), g.const(N)
        g.emit(f"pto.fill {name}, {zero}, {count} : !pto.l1buf<{N}xf32>, f32")
        bufs.append(name)
    g.statements(bufs, rng.randint(3, 8), True)
    body = "\n".join(g.lines)
    return ("func.func @k(%src: !pto.ptr<f32, global>, %out: !pto.ptr<f32, global>) "
            "attributes {pto.kernel} {\n" + body + "\n  func.return\n}\n")


def main() -> None:
    from tests.passes.crossval import cross_validate

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--start", type=int, default=0)
    opts = parser.parse_args()
    report = cross_validate(range(opts.start, opts.start + opts.count))
    print(report.summary())
    for line in report.disagreements[:20]:
        print(line)


if __name__ == "__main__":
    main()

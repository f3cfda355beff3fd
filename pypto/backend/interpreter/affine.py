"""Pure affine maths of the interpreter: linear forms over the lane symbols, and boxes of lanes
mapped onto buffers. No NumPy arrays, no run-time state, no IR: every function here is a fact
about integers, tested on its own against brute-force enumeration
(tests/backend/interpreter/test_affine.py).

- **Forms** (`Form`, `Poly`): `rest + sum(coef[s] * s)` over the lane symbols (`SYMBOLS`), each
  coefficient a polynomial of uniform values. The access planner (plan.py) builds them from the
  IR; see docs/interpreter.md, "The access planner".
- **Boxes**: a lane vector's lanes laid out as a row-major box of axes (`subbox`, `Box`), a
  planned access's parts evaluated on it as one strided view (`box_view`), whether the view
  touches an element twice (`box_injective`), and whether a comparison has one outcome over a
  range (`same_outcome`).
- **Block grids** of a batch copy: per-block starts as an affine grid (`affine_grid`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# -- linear forms ------------------------------------------------------------------------------

SYMBOLS = ("l0", "l1", "l2", "b0", "b1", "b2", "w", "n")
"""Lane symbols, in the order the run time receives their coefficients."""

Poly = dict[tuple[str, ...], int]
"""A polynomial of uniform values: monomial (sorted leaf expressions) -> integer coefficient."""


def add_term(out: Poly, m: tuple[str, ...], c: int) -> None:
    """out += c * m, keeping no zero coefficient."""
    v = out.get(m, 0) + c
    if v:
        out[m] = v
    else:
        out.pop(m, None)


def padd(a: Poly, b: Poly, sign: int = 1) -> Poly:
    """a + sign * b."""
    out = dict(a)
    for m, c in b.items():
        add_term(out, m, sign * c)
    return out


def pmul(a: Poly, b: Poly) -> Poly:
    """a * b."""
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            add_term(out, tuple(sorted(ma + mb)), ca * cb)
    return out


def poly_expr(p: Poly) -> str:
    """Python source computing the polynomial exactly (Python ints) in generated code."""
    if not p:
        return "0"
    terms = []
    for m, c in sorted(p.items()):
        factors = [str(c)] if c != 1 or not m else []
        factors += [f"int({leaf})" for leaf in m]
        terms.append("*".join(factors))
    return " + ".join(terms)


@dataclass(frozen=True)
class Form:
    """`rest + sum(coef[s] * s)`: an exact linear form over the lane symbols."""
    rest: tuple[tuple[tuple[str, ...], int], ...]
    coef: tuple[tuple[str, tuple[tuple[tuple[str, ...], int], ...]], ...]

    @staticmethod
    def make(rest: Poly, coef: dict[str, Poly]) -> Form:
        return Form(tuple(sorted(rest.items())),
                    tuple(sorted((s, tuple(sorted(p.items()))) for s, p in coef.items() if p)))

    @property
    def rest_poly(self) -> Poly:
        return dict(self.rest)

    @property
    def coef_polys(self) -> dict[str, Poly]:
        return {s: dict(p) for s, p in self.coef}

    @property
    def uniform(self) -> bool:
        return not self.coef

    def __add__(self, o: Form) -> Form:
        coef = self.coef_polys
        for s, p in o.coef_polys.items():
            coef[s] = padd(coef.get(s, {}), p)
        return Form.make(padd(self.rest_poly, o.rest_poly), coef)

    def __sub__(self, o: Form) -> Form:
        coef = self.coef_polys
        for s, p in o.coef_polys.items():
            coef[s] = padd(coef.get(s, {}), p, -1)
        return Form.make(padd(self.rest_poly, o.rest_poly, -1), coef)

    def scaled(self, k: Poly) -> Form:
        return Form.make(pmul(self.rest_poly, k),
                         {s: pmul(p, k) for s, p in self.coef_polys.items()})

    def leaves(self) -> set[str]:
        out = {leaf for m, _ in self.rest for leaf in m}
        out.update(leaf for _, p in self.coef for m, _ in p for leaf in m)
        return out

    def source(self) -> str:
        """`(rest, c_l0, ..., c_n)` as Python source (exact ints)."""
        coef = self.coef_polys
        return "(" + ", ".join([poly_expr(self.rest_poly)] +
                               [poly_expr(coef.get(s, {})) for s in SYMBOLS]) + ")"


def const_form(value: int) -> Form:
    """The form of an integer constant."""
    return Form.make({(): value} if value else {}, {})


def sym_form(name: str, k: Poly | None = None) -> Form:
    """`k * name` for a lane symbol `name` (k = 1 by default)."""
    return Form.make({}, {name: k or {(): 1}})


# -- boxes of lanes ----------------------------------------------------------------------------

Part = tuple[tuple[int, int, int, int, int, int, int, int, int], int]
"""A form evaluated for the run time: ((rest, c_l0, c_l1, c_l2, c_b0, c_b1, c_b2, c_w, c_n),
width in bits)."""

Box = tuple[list[tuple[str, int, int, int]], tuple[int, int, int], tuple[int, int, int]]
"""(axes, first block's coords, first lane's local coords): each axis is (kind "b"/"l", or
"w"/"n" in a window of warps, coordinate, length, block-index step), slowest first."""

View = tuple[int, tuple[int, ...], tuple[int, ...], int, int]
"""(base, shape, strides, lowest, highest element) of a box mapped onto a buffer."""

_M64 = 1 << 64


def wrap64(x: int) -> int:
    """`x` wrapped to int64, as NumPy's int64 arithmetic wraps."""
    return (x + (1 << 63)) % _M64 - (1 << 63)


def box_size(shape: Any) -> int:
    """How many lanes a box of this shape holds."""
    n = 1
    for d in shape:
        n *= d
    return n


def box_injective(shape: Any, strides: Any) -> bool:
    """Does the box touch every element at most once? (Sorted by stride, each axis must step
    past everything the smaller ones span: a sufficient mixed-radix test.)"""
    axes = sorted((abs(s), n) for n, s in zip(shape, strides) if n > 1)
    span = 0
    for s, n in axes:
        if s <= span:
            return False
        span += s * (n - 1)
    return True


def grid_injective(dims: list[tuple[int, int]]) -> bool:
    """`box_injective` for a grid of (extent, stride) axes whose strides must also be positive
    (a batch copy's HBM tiles: a zero or negative stride fails, as a shared or reversed tile
    is not written through one view)."""
    if any(s <= 0 for e, s in dims if e > 1):
        return False
    return box_injective([e for e, _ in dims], [s for _, s in dims])


def subbox(start: int, count: int, dims: tuple[int, int, int]) -> \
        tuple[list[tuple[int, int]], tuple[int, int, int]] | None:
    """Linear positions start..start+count-1 of a row-major box of `dims` (x fastest) as a
    sub-box: ([(coordinate, length)] slowest first, coordinates of `start`), or None when they
    are not one."""
    coords = (start % dims[0], (start // dims[0]) % dims[1], start // (dims[0] * dims[1]))
    axes: list[tuple[int, int]] = []
    inner = 1
    for i, d in enumerate(dims):
        if inner == count:
            break
        if d == 1:
            continue
        if start % (inner * d) == 0 and count % (inner * d) == 0:
            axes.append((i, d))
            inner *= d
            continue
        if count % inner or start % inner:
            return None
        m = count // inner
        if coords[i] + m > d:
            return None
        axes.append((i, m))
        inner *= m
        break
    if inner != count:
        return None
    return axes[::-1], coords


def vector_box(first_lane: int, count: int, grid: tuple[int, int, int],
               block: tuple[int, int, int]) -> Box | None:
    """The lanes first_lane..first_lane+count-1 of a launch as a box: whole blocks (a sub-box
    of the grid times the whole block) or a run of lanes inside one block (a sub-box of the
    block); None when they are neither."""
    lanes = block[0] * block[1] * block[2]
    local_base = first_lane % lanes
    if first_lane % lanes == 0 and count % lanes == 0:
        blocks = subbox(first_lane // lanes, count // lanes, grid)
        if blocks is None:
            return None
        b_axes, b0 = blocks
        l_axes = [(i, d) for i, d in ((2, block[2]), (1, block[1]), (0, block[0])) if d > 1]
        l0 = (0, 0, 0)
    elif local_base + count <= lanes:
        b = first_lane // lanes
        gx, gy, _ = grid
        b_axes, b0 = [], (b % gx, (b // gx) % gy, b // (gx * gy))
        inner = subbox(local_base, count, block)
        if inner is None:
            return None
        l_axes, l0 = inner
    else:
        return None
    axes: list[tuple[str, int, int, int]] = []
    step = 1
    for i, n in reversed(b_axes):
        axes.append(("b", i, n, step))
        step *= n
    axes.reverse()
    axes += [("l", i, n, 0) for i, n in l_axes]
    return axes, b0, l0


def box_view(box: Box, stride: int, parts: tuple[Part, ...], block: tuple[int, int, int],
             ws: int) -> View | None:
    """The planned access with offset `parts` over the lanes of `box` as one strided view of
    a buffer whose blocks' copies are `stride` elements apart (0: one copy); None when the forms
    do not map onto the box or a part may wrap (its bound leaves its integer width)."""
    axes, b0, l0 = box
    if axes and axes[-1][0] == "n":
        return _warp_window_view(box, stride, parts, ws)
    bx, by, _ = block
    lin = (1, bx, bx * by)
    # the box's local linear ids span [first, last]: warp and lane-in-warp bounds
    first = l0[0] + bx * l0[1] + bx * by * l0[2]
    last = first + sum(lin[i] * (n - 1) for kind, i, n, _ in axes if kind == "l")
    w_lo, w_hi = first // ws, last // ws
    n_lo, n_hi = (first % ws, last % ws) if w_lo == w_hi else (0, ws - 1)
    strides = [0] * len(axes)
    base = 0
    cw_all = cn_all = 0
    for (rest, c0, c1, c2, d0, d1, d2, cw, cn), width in parts:
        cl = (c0, c1, c2)
        cb = (d0, d1, d2)
        pbase = rest + cb[0] * b0[0] + cb[1] * b0[1] + cb[2] * b0[2] + \
            cl[0] * l0[0] + cl[1] * l0[1] + cl[2] * l0[2]
        lo = hi = pbase
        for j, (kind, i, n, _) in enumerate(axes):
            s = cb[i] if kind == "b" else cl[i]
            strides[j] += s
            ext = s * (n - 1)
            if ext < 0:
                lo += ext
            else:
                hi += ext
        for c, a, b in ((cw, w_lo, w_hi), (cn, n_lo, n_hi)):  # bounds, for the wrap test
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
        lim = 1 << (width - 1)
        if lo < -lim or hi >= lim:
            return None  # the program's offset may wrap: let it
        base += pbase
        cw_all += cw
        cn_all += cn
    shape = [n for _, _, n, _ in axes]
    if cw_all or cn_all:  # warp * ws + lane is the linear local id
        if cw_all == ws * cn_all:
            base += cn_all * first
            for j, (kind, i, _, _) in enumerate(axes):
                if kind == "l":
                    strides[j] += cn_all * lin[i]
        else:
            # other multiples of warp and lane (`red + warp * 32`, `sums + warp`): the
            # lanes of a 1-D block seen as (warps, lanes in the warp), one axis each
            last_l = axes[-1] if axes else None
            n_l = sum(1 for kind, *_ in axes if kind == "l")
            if n_l != 1 or last_l is None or last_l[0] != "l" or \
                    block[1] * block[2] != 1 or first % ws or last_l[2] % ws:
                return None
            c = strides[-1]
            strides = strides[:-1] + [c * ws + cw_all, c + cn_all]
            shape = shape[:-1] + [last_l[2] // ws, ws]
            base += cw_all * (first // ws)
    return _finish_box(base, shape, strides, axes, stride)


def _warp_window_view(box: Box, stride: int, parts: tuple[Part, ...], ws: int) -> View | None:
    """`box_view` for the box of a 2-D lane window (windows.WarpWindowContext: block axes,
    then warps, then lanes in the warp, in 1-D blocks): the local id is `warp * ws + lane`,
    so each part's stride is `c_l0 * ws + c_w` along the warps and `c_l0 + c_n` along the
    lanes; the same bounds (wrap-around) test as `box_view`."""
    axes, b0, l0 = box
    w0, n0 = divmod(l0[0], ws)
    strides = [0] * len(axes)
    base = 0
    for (rest, c0, _, _, d0, d1, d2, cw, cn), width in parts:
        cb = (d0, d1, d2)
        pbase = rest + d0 * b0[0] + d1 * b0[1] + d2 * b0[2] + c0 * l0[0] + cw * w0 + cn * n0
        lo = hi = pbase
        for j, (kind, i, n, _) in enumerate(axes):
            s = cb[i] if kind == "b" else c0 * ws + cw if kind == "w" else c0 + cn
            strides[j] += s
            ext = s * (n - 1)
            if ext < 0:
                lo += ext
            else:
                hi += ext
        lim = 1 << (width - 1)
        if lo < -lim or hi >= lim:
            return None  # the program's offset may wrap: let it
        base += pbase
    return _finish_box(base, [n for _, _, n, _ in axes], strides, axes, stride)


def _finish_box(base: int, shape: list[int], strides: list[int], axes: Any,
                stride: int) -> View:
    """A box's (base, shape, strides, lowest, highest element): the bounds from the strides
    within one block's copy, then each block axis moved by the copies' `stride` (batch mode,
    L1: block b's copy starts at element b * stride)."""
    lo = hi = base
    for s, n in zip(strides, shape):
        ext = s * (n - 1)
        if ext < 0:
            lo += ext
        else:
            hi += ext
    if stride:
        for j, (kind, _, _, step) in enumerate(axes):
            if kind == "b":
                strides[j] += stride * step
    return base, tuple(shape), tuple(strides), lo, hi


def same_outcome(op: str, lo: int, hi: int, u: int) -> bool | None:
    """The outcome of `x OP u` if it is the same for every x in lo..hi, else None."""
    if op == "<":
        return True if hi < u else False if lo >= u else None
    if op == "<=":
        return True if hi <= u else False if lo > u else None
    if op == ">":
        return True if lo > u else False if hi <= u else None
    if op == ">=":
        return True if lo >= u else False if hi < u else None
    if u < lo or u > hi:
        return op == "!="
    if op == "==" and lo == hi == u:
        return True
    if op == "!=" and lo == hi == u:
        return False
    return None


# -- block grids of batch copies ---------------------------------------------------------------

def affine_grid(starts: list[int]) -> tuple[int, int, int, int, int] | None:
    """(n1, n2, s0, d1, d2) with `starts[i * n2 + j] == s0 + i * d1 + j * d2`, or None.

    The blocks of a batch come in row-major grid order, so HBM offsets computed from block ids
    (`row0 * K + k0`, `k0 * N + col0`) are affine in (block row, block column): n2 is where the
    first step of `starts` stops repeating. Plain Python: a batch has tens of blocks, too few
    for NumPy's per-call cost to pay off."""
    n = len(starts)
    s0 = starts[0]
    if n == 1:
        return 1, 1, s0, 0, 0
    d2 = starts[1] - s0
    n2 = 2
    while n2 < n and starts[n2] - starts[n2 - 1] == d2:
        n2 += 1
    if n2 == n:
        return 1, n, s0, 0, d2
    if n % n2:
        return None
    d1 = starts[n2] - s0
    row = starts[:n2]
    if starts != [x + i * d1 for i in range(n // n2) for x in row]:
        return None
    return n // n2, n2, s0, d1, d2

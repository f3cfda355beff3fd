"""The interpreter's pure affine maths (pypto/backend/interpreter/affine.py) against brute force:
every claim about a form, a box or a grid is checked by enumerating the integers it stands for."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from pypto.backend.interpreter.affine import (
    SYMBOLS, Form, affine_grid, box_injective, box_size, box_view, const_form, grid_injective,
    poly_expr, same_outcome, subbox, sym_form, vector_box, wrap64)
from tests.profiles import examples

ints = st.integers(-50, 50)


def _eval_form(f: Form, env: dict[str, int], syms: dict[str, int]) -> int:
    """The form's value with uniform leaves `env` and lane symbols `syms`, term by term."""
    def poly(p: dict[tuple[str, ...], int]) -> int:
        total = 0
        for m, c in p.items():
            v = c
            for leaf in m:
                v *= env[leaf]
            total += v
        return total
    return poly(f.rest_poly) + sum(poly(p) * syms[s] for s, p in f.coef_polys.items())


forms = st.builds(
    lambda c, k, s, u: const_form(c) + sym_form(s, {("u",): k}) + sym_form("l0").scaled({(): u}),
    ints, ints, st.sampled_from(SYMBOLS), ints)


@settings(max_examples=examples(60, 200), deadline=None)
@given(forms, forms, ints, st.fixed_dictionaries({s: ints for s in SYMBOLS}), ints)
def test_form_arithmetic_is_integer_arithmetic(a, b, u, syms, k):
    env = {"u": u}
    assert _eval_form(a + b, env, syms) == _eval_form(a, env, syms) + _eval_form(b, env, syms)
    assert _eval_form(a - b, env, syms) == _eval_form(a, env, syms) - _eval_form(b, env, syms)
    assert _eval_form(a.scaled({(): k}), env, syms) == k * _eval_form(a, env, syms)
    assert (a - a).uniform and not (a - a).rest  # no zero coefficient is kept
    # the source the generated code evaluates gives the same coefficients
    coef = eval(a.source(), {"int": int, "u": u})  # noqa: S307 - our own generated source
    assert coef[0] + sum(c * syms[s] for c, s in zip(coef[1:], SYMBOLS)) == \
        _eval_form(a, env, syms)
    assert eval(poly_expr(a.rest_poly), {"int": int, "u": u}) == \
        _eval_form(a, env, dict.fromkeys(SYMBOLS, 0))  # noqa: S307


@settings(max_examples=examples(100, 300), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(-12, 12)), min_size=1, max_size=4))
def test_box_injective_never_claims_a_box_that_collides(dims):
    shape, strides = [e for e, _ in dims], [s for _, s in dims]
    addresses = [sum(i * s for i, s in zip(idx, strides))
                 for idx in itertools.product(*(range(e) for e in shape))]
    assert box_size(shape) == len(addresses)
    if box_injective(shape, strides):
        assert len(set(addresses)) == len(addresses)
    if grid_injective(dims):
        assert box_injective(shape, strides) and len(set(addresses)) == len(addresses)
        assert all(s > 0 for e, s in dims if e > 1)


def test_box_injective_accepts_the_row_major_boxes():
    assert box_injective([4, 8, 16], [128, 16, 1])
    assert box_injective([4, 8, 16], [-128, 16, -1])  # reversed axes are still one-to-one
    assert not box_injective([4, 8], [8, 0])  # a broadcast axis
    assert not box_injective([2, 17], [16, 1])  # rows wider than their stride overlap
    assert not grid_injective([(4, -8), (8, 1)])


@settings(max_examples=examples(100, 300), deadline=None)
@given(st.tuples(st.integers(1, 5), st.integers(1, 4), st.integers(1, 3)), st.data())
def test_subbox_is_exactly_the_run_of_positions(dims, data):
    total = dims[0] * dims[1] * dims[2]
    start = data.draw(st.integers(0, total - 1))
    count = data.draw(st.integers(1, total - start))
    got = subbox(start, count, dims)
    coords = [(p % dims[0], (p // dims[0]) % dims[1], p // (dims[0] * dims[1]))
              for p in range(start, start + count)]
    if got is None:  # refused: the run is then not a box (some coordinate set is not a product)
        ranges = [sorted({c[i] for c in coords}) for i in range(3)]
        assert box_size([len(r) for r in ranges]) != count or any(
            r != list(range(r[0], r[-1] + 1)) for r in ranges)
        return
    axes, first = got
    assert first == coords[0]
    # the box, row-major with x fastest (axes slowest first), enumerates the run in order
    walk = []
    for idx in itertools.product(*(range(n) for _, n in axes)):
        c = list(first)
        for (i, _), k in zip(axes, idx):
            c[i] += k
        walk.append(tuple(c))
    assert walk == coords


def _lane_symbols(lane: int, grid, block, ws: int) -> list[int]:
    bl = block[0] * block[1] * block[2]
    b, loc = divmod(lane, bl)
    gx, gy, _ = grid
    bx, by, _ = block
    return [loc % bx, (loc // bx) % by, loc // (bx * by),
            b % gx, (b // gx) % gy, b // (gx * gy), loc // ws, loc % ws]


@settings(max_examples=examples(80, 300), deadline=None)
@given(st.sampled_from([(4, 1, 1), (2, 3, 1), (3, 2, 2)]),
       st.sampled_from([(8, 1, 1), (4, 2, 1), (2, 2, 2), (16, 1, 1)]),
       st.lists(st.integers(-6, 6), min_size=9, max_size=9), st.integers(0, 40),
       st.booleans(), st.data())
def test_box_view_is_the_offset_of_every_lane(grid, block, coef, stride, whole, data):
    """The strided view box_view makes for a vector's lanes holds, lane by lane in vector
    order, the form's value (plus the block copies' stride), and its bounds are the extremes."""
    ws = 4
    bl = block[0] * block[1] * block[2]
    lanes = grid[0] * grid[1] * grid[2] * bl
    if whole:
        nb = data.draw(st.integers(1, lanes // bl))
        first = data.draw(st.integers(0, lanes // bl - nb)) * bl
        count = nb * bl
    else:
        first = data.draw(st.integers(0, lanes - 1))
        count = data.draw(st.integers(1, bl - first % bl))
    box = vector_box(first, count, grid, block)
    if box is None:
        return
    part = (tuple(coef), 32)
    view = box_view(box, stride, (part,), block, ws)
    if view is None:
        return
    base, shape, strides, lo, hi = view
    assert box_size(shape) == count
    got = [base + sum(i * s for i, s in zip(idx, strides))
           for idx in itertools.product(*(range(n) for n in shape))]
    want, inner = [], []
    for lane in range(first, first + count):
        sy = _lane_symbols(lane, grid, block, ws)
        v = coef[0] + sum(c * x for c, x in zip(coef[1:], sy))
        inner.append(v)
        want.append(v + stride * (lane // bl - first // bl))
    assert got == want
    assert (lo, hi) == (min(inner), max(inner))


def test_box_view_refuses_a_part_that_may_wrap():
    box = vector_box(0, 64, (4, 1, 1), (16, 1, 1))
    assert box is not None
    ok = ((0, 1, 0, 0, 16, 0, 0, 0, 0), 32)
    assert box_view(box, 0, (ok,), (16, 1, 1), 32) is not None
    wraps = ((2**31 - 10, 1, 0, 0, 16, 0, 0, 0, 0), 32)
    assert box_view(box, 0, (wraps,), (16, 1, 1), 32) is None
    assert box_view(box, 0, (wraps[:1] + (64,),), (16, 1, 1), 32) is not None


@settings(max_examples=examples(100, 300), deadline=None)
@given(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), st.integers(-5, 5),
       st.integers(0, 6), st.integers(-8, 8))
def test_same_outcome_only_when_every_value_agrees(op, lo, span, u):
    hi = lo + span
    outcomes = {eval(f"{x} {op} {u}") for x in range(lo, hi + 1)}  # noqa: S307
    got = same_outcome(op, lo, hi, u)
    if got is not None:
        assert outcomes == {got}
    elif span == 0:
        raise AssertionError("one value always has one outcome")


def test_wrap64_is_int64_wrap_around():
    assert wrap64(2**63) == -(2**63)
    assert wrap64(-(2**63) - 1) == 2**63 - 1
    assert wrap64(12) == 12


@settings(max_examples=examples(60, 200), deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(-50, 50), st.integers(-9, 9),
       st.integers(-9, 9), st.one_of(st.none(), st.integers(0, 35), ), st.integers(-3, 3))
def test_affine_grid_finds_the_grid_or_refuses(n1, n2, s0, d1, d2, poke, delta):
    starts = [s0 + i * d1 + j * d2 for i in range(n1) for j in range(n2)]
    if poke is not None and poke < len(starts):
        starts[poke] += delta
    grid = affine_grid(starts)
    if grid is None:  # refused: then no (n1', n2') split describes the list
        for a in range(1, len(starts) + 1):
            if len(starts) % a:
                continue
            b = len(starts) // a
            e1 = starts[b] - starts[0] if a > 1 else 0
            e2 = starts[1] - starts[0] if b > 1 else 0
            assert starts != [starts[0] + i * e1 + j * e2 for i in range(a) for j in range(b)]
        return
    g1, g2, t0, e1, e2 = grid
    assert g1 * g2 == len(starts)
    assert starts == [t0 + i * e1 + j * e2 for i in range(g1) for j in range(g2)]

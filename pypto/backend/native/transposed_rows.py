"""Rows of lanes as vectors: 8 lanes of a full lane function run side by side, their row
loads transposed in registers.

gemv lane/row (`for c in range(ncols): acc = acc + A[r * ncols + c] * x[c]`, one lane per row)
is each lane's in-order float sum over its own row: LLVM runs the lane loop outside and each
lane's loop as a scalar chain (about five instructions per multiply-add), and neither its
unroll-and-jam nor its outer-loop vectoriser helps (docs/native.md#speed). Here the full lane
function (full_blocks.py: no checks, no guards) is rewritten, in the llvmlite module, as
`@k.full.lane.rows`: V lanes `tx .. tx + V - 1` at once, every lane-varying value a vector
of V elements (LLVM's vector instructions are element-wise: each element is the scalar
instruction's result, bit for bit), the lane-uniform ones scalars as before. Its loop runs W
iterations per trip: a load at `X + c` (X not depending on the counter c) reads, for each
lane, the W consecutive elements `X_j + c .. X_j + c + W - 1` as one vector (elements the
scalar loop reads too), and shuffles transpose each W lanes' rows into W columns, so the W
iterations run in their order on vectors of the lanes: each lane's own operations keep their
order (its sum is the interpreter's, addition by addition). The iterations left over (a trip
count not a multiple of W) run one by one, their loads gathered.

Only where the lanes' order cannot be seen: the function returns 0 on every path (it cannot
fail), has one loop (a counted `for`, step 1, uniform bounds, one body block, no store in it),
branches only on uniform conditions, calls only element-wise LLVM intrinsics, divides only by
non-zero constants, and its stores come after its loads, in one block, to tensors it does not
load, all `noalias` in the grid function: the stores then run lane by lane in the lanes'
order, after the lanes' loads, which no store can change. The grid function's constant-trip
`tx` loops over the full lane function (a multiple of V lanes from 0) then call
`@k.full.lane.rows` every V lanes. docs/native.md#transposed-rows.
"""

from __future__ import annotations

import re
from typing import Any

from llvmlite import ir

V = 8
"""Lanes per call of the rows function, every lane-varying value a vector of V elements (a
multiple of W: the groups' columns are joined; 16 and 32 measured no faster for gemv)."""

W = 8
"""Rows transposed together: `_transpose` is AVX's 8 x 8 one (24 shuffles, 16 of them within
128-bit halves), the masks below."""

_UNPACK_LO = [0, 8, 1, 9, 4, 12, 5, 13]
_UNPACK_HI = [2, 10, 3, 11, 6, 14, 7, 15]
_PAIRS_LO = [0, 1, 8, 9, 4, 5, 12, 13]
_PAIRS_HI = [2, 3, 10, 11, 6, 7, 14, 15]
_HALVES_LO = [0, 1, 2, 3, 8, 9, 10, 11]
_HALVES_HI = [4, 5, 6, 7, 12, 13, 14, 15]

PREFETCH = True
"""Each row load also prefetches the row V lanes on (the next call's): 0.054 -> 0.045 ms for
gemv 4096 x 64. A hint: it cannot fault or change a value."""

ROWS_SUFFIX = ".rows"
"""`@k.full.lane` + this: the V-lane version."""

_LANE_X = 10
"""The lane x id is the lane function's 10th argument from the end (then y, z, the grid's and
block's dims, the error record: simt_to_lanes.py)."""

_BINARY = {"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr",
           "fadd", "fsub", "fmul", "fdiv", "frem"}
_DIVISIONS = {"sdiv", "udiv", "srem", "urem"}
_ELEMENTWISE = {"llvm.maximum", "llvm.minimum", "llvm.maxnum", "llvm.minnum", "llvm.fma",
                "llvm.fmuladd", "llvm.trunc", "llvm.floor", "llvm.ceil", "llvm.round",
                "llvm.roundeven", "llvm.rint", "llvm.nearbyint", "llvm.fabs", "llvm.sqrt",
                "llvm.copysign", "llvm.fptosi.sat", "llvm.fptoui.sat", "llvm.ctpop",
                "llvm.smax", "llvm.smin", "llvm.umax", "llvm.umin"}
_TYPE_TOKEN = re.compile(r"^(f16|bf16|f32|f64|i\d+)$")


class _Refused(Exception):
    """The function is not of the shape this module rewrites (a reason, for debugging)."""


def _intrinsic(name: str) -> tuple[str, list[str]] | None:
    """`llvm.fptosi.sat.i32.f64` -> (`llvm.fptosi.sat`, [`i32`, `f64`]) when element-wise."""
    parts = name.split(".")
    n = len(parts)
    while n > 0 and _TYPE_TOKEN.match(parts[n - 1]):
        n -= 1
    base = ".".join(parts[:n])
    return (base, parts[n:]) if base in _ELEMENTWISE and n < len(parts) else None


class _Loop:
    """The function's one counted loop: header (phis, `iv < ub`), body block (its latch)."""

    def __init__(self, fn: Any):
        backs = [(b, s) for i, b in enumerate(fn.blocks) for s in _successors(b)
                 if fn.blocks.index(s) <= i]
        if len(backs) != 1:
            raise _Refused(f"{len(backs)} loops")
        self.body, self.header = backs[0]
        term = self.header.terminator
        if not isinstance(term, ir.ConditionalBranch) or term.operands[1] is not self.body \
                or self.body.terminator.operands != [self.header]:
            raise _Refused("loop shape")
        self.exit = term.operands[2]
        cond = term.operands[0]
        if not isinstance(cond, ir.ICMPInstr) or cond.op != "slt" or cond.opname != "icmp":
            raise _Refused("loop test")
        self.iv, self.ub = cond.operands
        if not isinstance(self.iv, ir.PhiInstr) or self.iv.parent is not self.header:
            raise _Refused("loop counter")
        step = [v for v, b in self.iv.incomings if b is self.body]
        if len(step) != 1 or not _is_add_one(step[0], self.iv):
            raise _Refused("loop step")
        self.step = step[0]
        self.phis = [i for i in self.header.instructions if isinstance(i, ir.PhiInstr)]
        if self.header.instructions[len(self.phis):] != [cond, term]:
            raise _Refused("header shape")
        outside = [b for v, b in self.iv.incomings if b is not self.body]
        if len(outside) != 1 or len(self.iv.incomings) != 2:
            raise _Refused("loop entry")
        self.pre = outside[0]


def _is_add_one(v: Any, iv: Any) -> bool:
    return isinstance(v, ir.Instruction) and v.opname == "add" and v.operands[0] is iv and \
        isinstance(v.operands[1], ir.Constant) and v.operands[1].constant == 1


def _align(t: Any) -> int:
    if isinstance(t, ir.IntType):
        return max(t.width // 8, 1)
    return {ir.HalfType: 2, ir.FloatType: 4, ir.DoubleType: 8}.get(type(t), 1)


def _successors(block: Any) -> list[Any]:
    term = block.terminator
    if isinstance(term, ir.Branch):
        return [term.operands[0]]
    if isinstance(term, ir.ConditionalBranch):
        return [term.operands[1], term.operands[2]]
    return []


def _root(ptr: Any) -> Any:
    while isinstance(ptr, ir.GEPInstr):
        ptr = ptr.pointer
    return ptr


class _Rows:
    """Builds `@k.full.lane.rows` from the full lane function `fn` (raises _Refused)."""

    def __init__(self, module: Any, fn: Any):
        self.module, self.fn = module, fn
        self.tx = fn.args[len(fn.args) - _LANE_X]
        self.loop = _Loop(fn)
        self.varying = self._varying()
        self._check()

    # --- analysis ------------------------------------------------------------------------
    def _varying(self) -> set[int]:
        varying = {id(self.tx)}
        changed = True
        while changed:
            changed = False
            for b in self.fn.blocks:
                for i in b.instructions:
                    if id(i) in varying:
                        continue
                    ops = [v for v, _ in i.incomings] if isinstance(i, ir.PhiInstr) \
                        else i.operands
                    if any(id(o) in varying for o in ops):
                        varying.add(id(i))
                        changed = True
        return varying

    def vary(self, v: Any) -> bool:
        return id(v) in self.varying

    def _depends_on_iv(self, v: Any, seen: set[int] | None = None) -> bool:
        seen = set() if seen is None else seen
        if v is self.loop.iv:
            return True
        if not isinstance(v, ir.Instruction) or isinstance(v, ir.PhiInstr) or id(v) in seen:
            return isinstance(v, ir.PhiInstr) and v.parent is self.loop.header
        seen.add(id(v))
        return any(self._depends_on_iv(o, seen) for o in v.operands)

    def row_index(self, gep: Any) -> bool:
        """Is `gep`'s index `X + ext(iv)` or `X + iv` with X not depending on the counter (so
        iteration c + k reads element index + k)?"""
        idx = gep.indices[0]
        if not isinstance(idx, ir.Instruction) or idx.opname != "add":
            return False
        for a, b in (idx.operands, idx.operands[::-1]):
            iv = b.operands[0] if isinstance(b, ir.CastInstr) and b.opname == "sext" else b
            if iv is self.loop.iv and not self._depends_on_iv(a):
                return True
        return False

    def _check(self) -> None:
        loop = self.loop
        loads: set[int] = set()
        store_blocks = []
        for b in self.fn.blocks:
            for i in b.instructions:
                if isinstance(i, ir.Ret):
                    if not (isinstance(i.return_value, ir.Constant) and
                            i.return_value.constant == 0):
                        raise _Refused("a status other than 0")
                elif isinstance(i, ir.ConditionalBranch):
                    if self.vary(i.operands[0]):
                        raise _Refused("a lane-varying branch")
                elif isinstance(i, ir.Branch | ir.PhiInstr | ir.CompareInstr | ir.SelectInstr |
                                ir.CastInstr):
                    pass
                elif isinstance(i, ir.GEPInstr):
                    if len(i.indices) != 1 or self.vary(i.pointer):
                        raise _Refused("a gep shape")
                elif isinstance(i, ir.LoadInstr):
                    loads.add(id(_root(i.operands[0])))
                    if not isinstance(_root(i.operands[0]), ir.Argument):
                        raise _Refused("a load not from a parameter")
                elif isinstance(i, ir.StoreInstr):
                    if b is loop.body or b is loop.header:
                        raise _Refused("a store in the loop")
                    if not isinstance(_root(i.operands[1]), ir.Argument):
                        raise _Refused("a store not to a parameter")
                    store_blocks.append(b)
                elif isinstance(i, ir.CallInstr):
                    if _intrinsic(getattr(i.callee, "name", "")) is None:
                        raise _Refused(f"a call of {getattr(i.callee, 'name', '?')}")
                elif i.opname in _DIVISIONS:
                    if not (isinstance(i.operands[1], ir.Constant) and i.operands[1].constant):
                        raise _Refused("a division by a variable")
                elif i.opname not in _BINARY:
                    raise _Refused(f"instruction {i.opname}")
        if len(set(map(id, store_blocks))) > 1:
            raise _Refused("stores in several blocks")
        self.stores = [i for b in store_blocks[:1] for i in b.instructions
                       if isinstance(i, ir.StoreInstr)]
        self.store_roots = {id(_root(s.operands[1])) for s in self.stores}
        self.load_roots = loads
        if self.store_roots & loads:
            raise _Refused("a tensor both loaded and stored")
        if store_blocks:  # no load after the first store (in its block or any later one)
            sb = store_blocks[0]
            first = sb.instructions.index(self.stores[0])
            later = sb.instructions[first:] + [i for b in self.fn.blocks[
                self.fn.blocks.index(sb) + 1:] for i in b.instructions]
            if any(isinstance(i, ir.LoadInstr) for i in later):
                raise _Refused("a load after a store")
            if sb in (loop.header, loop.body) or self.fn.blocks.index(sb) < \
                    self.fn.blocks.index(loop.header):
                raise _Refused("a store before the loop")
        for i in loop.body.instructions:  # values of the body used only in the body/header
            for b in self.fn.blocks:
                if b in (loop.body,):
                    continue
                for user in b.instructions:
                    ops = [v for v, blk in user.incomings if blk is not loop.body] \
                        if isinstance(user, ir.PhiInstr) and b is loop.header \
                        else ([v for v, _ in user.incomings] if isinstance(user, ir.PhiInstr)
                              else user.operands)
                    if any(o is i for o in ops):
                        raise _Refused("a body value used after the loop")
        if not any(isinstance(i, ir.LoadInstr) and self.vary(i.operands[0]) and
                   isinstance(i.operands[0], ir.GEPInstr) and self.row_index(i.operands[0])
                   for i in loop.body.instructions):
            raise _Refused("no row load in the loop")
        for b in self.fn.blocks:
            for i in b.instructions:
                ops = [v for v, _ in i.incomings] if isinstance(i, ir.PhiInstr) else i.operands
                for n, o in enumerate(ops):
                    if isinstance(o, ir.GEPInstr) and self.vary(o) and not (
                            isinstance(i, ir.LoadInstr) and n == 0 or
                            isinstance(i, ir.StoreInstr) and n == 1):
                        raise _Refused("a lane-varying address used otherwise")
        if self.vary(loop.ub) or any(self.vary(v) for v, b in loop.iv.incomings
                                     if b is loop.pre):
            raise _Refused("lane-varying loop bounds")

    # --- emission ------------------------------------------------------------------------
    def build(self) -> Any:
        """The V-lane function `@<fn>.rows` (same arguments: lane x `tx` is the first of V)."""
        fn, loop = self.fn, self.loop
        rows = ir.Function(self.module, fn.function_type, name=fn.name + ROWS_SUFFIX)
        rows.linkage = "internal"
        rows.attributes.add("alwaysinline")
        self.vals: dict[int, Any] = {id(a): b for a, b in zip(fn.args, rows.args)}
        self.blocks: dict[int, Any] = {}
        for b in fn.blocks:
            if b is loop.header:
                self.blocks[id(b)] = chead = rows.append_basic_block("chunk.head")
                cbody = rows.append_basic_block("chunk.body")
                rhead = rows.append_basic_block("rest.head")
                rbody = rows.append_basic_block("rest.body")
            elif b is not loop.body:
                self.blocks[id(b)] = rows.append_basic_block()
        builder = ir.IRBuilder(self.blocks[id(fn.blocks[0])])
        self.b = builder
        tx = rows.args[len(rows.args) - _LANE_X]
        lanes = ir.Constant(ir.VectorType(tx.type, V), list(range(V)))
        self.vals[id(self.tx)] = builder.add(self._splat(tx), lanes)
        phis: list[tuple[Any, Any, list[Any]]] = []  # (new phi, old phi, incomings)
        for b in fn.blocks:
            if b is loop.body:
                continue
            if b is loop.header:
                self._loop(chead, cbody, rhead, rbody, phis)
                continue
            builder.position_at_end(self.blocks[id(b)])
            for i in b.instructions:
                if isinstance(i, ir.PhiInstr):
                    new = builder.phi(self._type(i))
                    phis.append((new, i, i.incomings))
                    self.vals[id(i)] = new
                elif isinstance(i, ir.StoreInstr):
                    if i is self.stores[-1]:
                        self._stores()
                elif isinstance(i, ir.Ret):
                    builder.ret(ir.Constant(i.return_value.type, 0))
                elif isinstance(i, ir.Branch):
                    builder.branch(self._block(i.operands[0]))
                elif isinstance(i, ir.ConditionalBranch):
                    builder.cbranch(self.get(i.operands[0], self.vals),
                                    self._block(i.operands[1]), self._block(i.operands[2]))
                else:
                    self.vals[id(i)] = self._emit(i, self.vals)
        for new, old, incomings in phis:
            for v, blk in incomings:
                src = self._incoming_block(old, blk)
                builder.position_before(src.terminator)
                new.add_incoming(self.vec(v, self.vals) if self.vary(old)
                                 else self.get(v, self.vals), src)
        return rows

    def _incoming_block(self, phi: Any, blk: Any) -> Any:
        return self.rest_exit if blk is self.loop.header else self.blocks[id(blk)]

    def _block(self, blk: Any) -> Any:
        return self.blocks[id(blk)]

    def _type(self, v: Any) -> Any:
        return ir.VectorType(v.type, V) if self.vary(v) else v.type

    def _splat(self, v: Any) -> Any:
        vt = ir.VectorType(v.type, V)
        one = self.b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(ir.IntType(32), 0))
        return self.b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                                     ir.Constant(ir.VectorType(ir.IntType(32), V), [0] * V))

    def get(self, v: Any, vals: dict[int, Any]) -> Any:
        if isinstance(v, ir.Constant | ir.Function) or id(v) not in vals and \
                not isinstance(v, ir.Instruction | ir.Argument):
            return v
        return vals[id(v)]

    def vec(self, v: Any, vals: dict[int, Any]) -> Any:
        """`v` as a vector of V lanes (a uniform value splat)."""
        got = self.get(v, vals)
        return got if self.vary(v) else self._splat(got)

    def _lane(self, v: Any, j: int) -> Any:
        return self.b.extract_element(v, ir.Constant(ir.IntType(32), j))

    def _emit(self, i: Any, vals: dict[int, Any], columns: Any = None) -> Any:
        """Instruction `i` with its operands from `vals`: the scalar one when uniform, else
        its V-lane vector form (`columns`: the body copy's transposed row loads)."""
        b = self.b
        if not self.vary(i):
            return self._clone(i, [self.get(o, vals) for o in i.operands])
        if isinstance(i, ir.GEPInstr):
            return None  # (a lane-varying address: its loads gather or read rows)
        if isinstance(i, ir.LoadInstr):
            if columns is not None and id(i) in columns:
                return columns[id(i)]
            return self._gather(i, vals)
        if isinstance(i, ir.CallInstr):
            base, types = _intrinsic(i.callee.name)  # type: ignore[misc]
            args = [self.vec(a, vals) for a in i.args]
            rt = ir.VectorType(i.type, V)
            name = base + "." + ".".join(f"v{V}{t}" for t in types)
            fnty = ir.FunctionType(rt, [a.type for a in args])
            callee = self.module.globals.get(name) or ir.Function(self.module, fnty, name)
            return b.call(callee, args)
        ops = [self.vec(o, vals) for o in i.operands]
        return self._clone(i, ops, vector=True)

    def _clone(self, i: Any, ops: list[Any], vector: bool = False) -> Any:
        b, block = self.b, self.b.block
        if isinstance(i, ir.ICMPInstr):
            new = ir.ICMPInstr(block, i.op, *ops)
        elif isinstance(i, ir.FCMPInstr):
            new = ir.FCMPInstr(block, i.op, *ops, flags=i.flags)
        elif isinstance(i, ir.SelectInstr):
            new = ir.SelectInstr(block, *ops, flags=i.flags)
        elif isinstance(i, ir.CastInstr):
            typ = ir.VectorType(i.type, V) if vector else i.type
            new = ir.CastInstr(block, i.opname, ops[0], typ)
        elif isinstance(i, ir.GEPInstr):
            new = ir.GEPInstr(block, ops[0], ops[1:], i.inbounds, "",
                              source_etype=i.source_etype)
        elif isinstance(i, ir.LoadInstr):
            new = ir.LoadInstr(block, ops[0], typ=i.type)
        elif isinstance(i, ir.CallInstr):
            new = ir.CallInstr(block, ops[0], ops[1:])
        elif isinstance(i, ir.PhiInstr | ir.StoreInstr) or isinstance(i, ir.Terminator):
            raise _Refused(f"cloning {i.opname}")
        else:
            typ = ir.VectorType(i.type, V) if vector else i.type
            new = ir.Instruction(block, typ, i.opname, ops, flags=i.flags)
        b._insert(new)
        return new

    def _gather(self, i: Any, vals: dict[int, Any]) -> Any:
        """A load at a lane-varying `gep(base, index)`: V scalar loads."""
        gep = i.operands[0]
        base = self.get(gep.pointer, vals)
        index = self.vec(gep.indices[0], vals)
        out = ir.Constant(ir.VectorType(i.type, V), ir.Undefined)
        for j in range(V):
            ptr = self.b.gep(base, [self._lane(index, j)], inbounds=gep.inbounds,
                             source_etype=gep.source_etype)
            out = self.b.insert_element(out, self.b.load(ptr, typ=i.type),
                                        ir.Constant(ir.IntType(32), j))
        return out

    def _rows(self, i: Any, vals: dict[int, Any]) -> list[Any]:
        """A row load at iteration c (the first of W): each lane's row of W elements from its
        index at c, every W lanes' rows transposed into W columns, the groups' columns joined
        (column k: the V lanes' elements c + k)."""
        gep = i.operands[0]
        base = self.get(gep.pointer, vals)
        start, counter = self._row_start(gep.indices[0])
        first = self.vec(start, vals)  # (not depending on c: LLVM hoists it and its lanes)
        c = self.get(counter, vals)
        vt = ir.VectorType(i.type, W)
        ahead = self.b.mul(self.b.sub(self._lane(first, 1), self._lane(first, 0)),
                           ir.Constant(first.type.element, V)) if PREFETCH else None
        groups = []
        for g in range(V // W):
            v = []
            for j in range(g * W, g * W + W):
                index = self.b.add(self._lane(first, j), c)
                ptr = self.b.gep(base, [index], inbounds=gep.inbounds,
                                 source_etype=gep.source_etype)
                row = self.b.load(ptr, typ=vt)
                row.align = _align(i.type)  # (a row starts at any element)
                v.append(row)
                if PREFETCH:
                    self._prefetch(base, gep, self.b.add(index, ahead))
            v = self._transpose(v)
            groups.append(v)
        columns = []
        for k in range(W):
            parts = [g[k] for g in groups]
            while len(parts) > 1:  # join pairs: <n> + <n> -> <2n>
                n = parts[0].type.count
                mask = ir.Constant(ir.VectorType(ir.IntType(32), 2 * n), list(range(2 * n)))
                parts = [self.b.shuffle_vector(parts[m], parts[m + 1], mask)
                         for m in range(0, len(parts), 2)]
            columns.append(parts[0])
        return columns

    def _prefetch(self, base: Any, gep: Any, index: Any) -> None:
        """A hint (it cannot fault or change a value): the same elements of the row V lanes
        on, which the next call of the rows function reads."""
        ptr = self.b.gep(base, [index], inbounds=False, source_etype=gep.source_etype)
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        name = "llvm.prefetch.p0"
        fn = self.module.globals.get(name) or ir.Function(self.module, fnty, name)
        self.b.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])

    def _transpose(self, r: list[Any]) -> list[Any]:
        """The 8 x 8 transpose of rows `r` in AVX's three steps (unpack pairs of rows within
        128-bit halves, shuffle pairs of those, join halves): 24 shuffles, 16 of them within
        a 128-bit half."""
        def sh(a: Any, b: Any, mask: list[int]) -> Any:
            return self.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), W),
                                                           mask))
        t = []
        for p in range(0, W, 2):
            t += [sh(r[p], r[p + 1], _UNPACK_LO), sh(r[p], r[p + 1], _UNPACK_HI)]
        s = []
        for a, b in ((0, 2), (1, 3), (4, 6), (5, 7)):
            s += [sh(t[a], t[b], _PAIRS_LO), sh(t[a], t[b], _PAIRS_HI)]
        return [sh(s[k], s[k + 4], _HALVES_LO) for k in range(4)] + \
            [sh(s[k], s[k + 4], _HALVES_HI) for k in range(4)]

    def _row_start(self, idx: Any) -> tuple[Any, Any]:
        """(X, the counter's extension) of a row load's index `X + ext(iv)`."""
        for a, b in (idx.operands, idx.operands[::-1]):
            iv = b.operands[0] if isinstance(b, ir.CastInstr) and b.opname == "sext" else b
            if iv is self.loop.iv and not self._depends_on_iv(a):
                return a, b
        raise _Refused("row index")

    def _loop(self, chead: Any, cbody: Any, rhead: Any, rbody: Any,
              phis: list[tuple[Any, Any, dict[int, Any]]]) -> None:
        """The loop as chunks of W iterations (row loads transposed), then the rest."""
        loop, b = self.loop, self.b
        i64 = ir.IntType(64)
        b.position_at_end(chead)
        cvals = dict(self.vals)
        cphis = {}
        for p in loop.phis:
            cphis[id(p)] = cvals[id(p)] = b.phi(self._type(p))
        iv = cvals[id(loop.iv)]
        ub = self.get(loop.ub, self.vals)
        room = b.icmp_signed("<=", b.add(b.sext(iv, i64), ir.Constant(i64, W)), b.sext(ub, i64))
        b.cbranch(room, cbody, rhead)
        b.position_at_end(cbody)
        vals = dict(cvals)
        columns: dict[int, Any] = {}
        column_sets: dict[int, list[Any]] = {}
        for k in range(W):
            vals = dict(vals)
            if k:
                for p in loop.phis:
                    vals[id(p)] = latch[id(p)]
                vals[id(loop.iv)] = b.add(iv, ir.Constant(iv.type, k))
            for i in loop.body.instructions[:-1]:
                if isinstance(i, ir.LoadInstr) and self.vary(i) and \
                        isinstance(i.operands[0], ir.GEPInstr) and self.row_index(i.operands[0]):
                    if k == 0:
                        column_sets[id(i)] = self._rows(i, vals)
                    columns[id(i)] = column_sets[id(i)][k]
                vals[id(i)] = self._emit(i, vals, columns)
            latch = {id(p): (self.vec(v, vals) if self.vary(p) else self.get(v, vals))
                     for p in loop.phis for v, blk in p.incomings if blk is loop.body}
        nxt = b.add(iv, ir.Constant(iv.type, W))
        latch[id(loop.iv)] = nxt
        b.branch(chead)
        for p in loop.phis:
            for v, blk in p.incomings:
                if blk is loop.body:
                    cphis[id(p)].add_incoming(latch[id(p)], cbody)
                else:
                    phis.append((cphis[id(p)], p, [(v, blk)]))
        # the rest, one iteration at a time
        b.position_at_end(rhead)
        rvals = dict(self.vals)
        rphis = {}
        for p in loop.phis:
            rphis[id(p)] = rvals[id(p)] = b.phi(self._type(p))
            rphis[id(p)].add_incoming(cphis[id(p)], chead)
        cond = loop.header.terminator.operands[0]
        b.cbranch(self._clone(cond, [self.get(o, rvals) for o in cond.operands]), rbody,
                  self._block(loop.exit))
        b.position_at_end(rbody)
        vals = dict(rvals)
        for i in loop.body.instructions[:-1]:
            vals[id(i)] = self._emit(i, vals)
        for p in loop.phis:
            for v, blk in p.incomings:
                if blk is loop.body:
                    rphis[id(p)].add_incoming(self.vec(v, vals) if self.vary(p)
                                              else self.get(v, vals), rbody)
        b.branch(rhead)
        for p in loop.phis:  # after the loop: the rest's header values
            self.vals[id(p)] = rphis[id(p)]
        self.rest_exit = rhead

    def _stores(self) -> None:
        """Every store of the block, lane by lane in the lanes' order."""
        b = self.b
        for j in range(V):
            for s in self.stores:
                val, ptr = s.operands
                v = self.get(val, self.vals)
                if self.vary(val):
                    v = self._lane(v, j)
                if self.vary(ptr):
                    gep = ptr
                    index = self.vec(gep.indices[0], self.vals)
                    p = b.gep(self.get(gep.pointer, self.vals), [self._lane(index, j)],
                              inbounds=gep.inbounds, source_etype=gep.source_etype)
                else:
                    p = self.get(ptr, self.vals)
                b.store(v, p)



def _retargetable(grid: Any, full: Any) -> list[tuple[Any, Any]] | None:
    """The grid function's calls of `full` in constant-trip `tx` loops of a multiple of V
    lanes from 0, with each loop's `tx + 1` (None when a call is in another loop)."""
    found = []
    for blk in grid.blocks:
        for call in blk.instructions:
            if not (isinstance(call, ir.CallInstr) and call.callee is full):
                continue
            x = call.args[len(call.args) - _LANE_X]
            if not (isinstance(x, ir.PhiInstr) and len(x.incomings) == 1):
                continue
            xphi, head = x.incomings[0]
            test = head.terminator
            if not (isinstance(xphi, ir.PhiInstr) and xphi.parent is head and
                    isinstance(test, ir.ConditionalBranch) and test.operands[1] is blk):
                continue
            cmp = test.operands[0]
            if not (isinstance(cmp, ir.ICMPInstr) and cmp.op == "slt" and
                    cmp.operands[0] is xphi and isinstance(cmp.operands[1], ir.Constant) and
                    cmp.operands[1].constant > 0 and cmp.operands[1].constant % V == 0):
                continue
            starts = [v for v, _ in xphi.incomings if isinstance(v, ir.Constant)]
            steps = [v for v, _ in xphi.incomings if not isinstance(v, ir.Constant)]
            if len(xphi.incomings) != 2 or len(starts) != 1 or starts[0].constant != 0 or \
                    len(steps) != 1:
                continue
            step = steps[0]
            if not (isinstance(step, ir.Instruction) and step.opname == "add" and
                    isinstance(step.operands[1], ir.Constant) and step.operands[1].constant == 1
                    and isinstance(step.operands[0], ir.PhiInstr) and
                    [v for v, _ in step.operands[0].incomings] == [x]):
                continue
            found.append((call, step))
    return found


def add_rows(module: Any, name: str) -> bool:
    """Give kernel `name`'s full lane function its V-lane version and call it from the grid
    function's constant-trip `tx` loops (in the llvmlite module, before LLVM's
    optimisations). Returns whether it did."""
    functions = {f.name: f for f in module.functions}
    full, grid = functions.get(name + ".full.lane"), functions.get(name)
    if full is None or grid is None or not full.blocks:
        return False
    try:
        rows = _Rows(module, full)
    except _Refused:
        return False
    calls = _retargetable(grid, full)
    if not calls:
        return False
    position = {id(a): n for n, a in enumerate(full.args)}
    for call, _ in calls:  # the tensors loaded and stored are distinct, noalias launch tensors
        for root in rows.load_roots | rows.store_roots:
            passed = call.args[position[root]]
            if not (isinstance(passed, ir.Argument) and passed.parent is grid and
                    "noalias" in passed.attributes):
                return False
    fn = rows.build()
    for call, step in calls:
        call.operands[0] = fn
        step.operands = [step.operands[0], ir.Constant(step.type, V)]
        for i in (call, step):
            i._clear_string_cache()
    return True

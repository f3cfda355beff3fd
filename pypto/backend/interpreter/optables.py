"""Op tables shared by the planner (planning.py: which ops are pure arithmetic, which fuse
into a store, which comparisons it plans) and codegen (the Python each op becomes)."""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.ir import Operation

from pypto.dialects import pto

_ARITH_BINARY: dict[type[Operation], str] = {
    arith.AddiOp: "({a} + {b})",
    arith.SubiOp: "({a} - {b})",
    arith.MuliOp: "({a} * {b})",
    arith.AddfOp: "({a} + {b})",
    arith.SubfOp: "({a} - {b})",
    arith.MulfOp: "({a} * {b})",
    arith.DivfOp: "({a} / {b})",
    arith.AndIOp: "({a} & {b})",
    arith.OrIOp: "({a} | {b})",
    arith.XOrIOp: "({a} ^ {b})",
    arith.MinimumfOp: "_fmin({a}, {b})",
    arith.MaximumfOp: "_fmax({a}, {b})",
    arith.MinSIOp: "_np.minimum({a}, {b})",
    arith.MaxSIOp: "_np.maximum({a}, {b})",
    arith.ShRSIOp: "_np.right_shift({a}, {b})",
    arith.ShLIOp: "_np.left_shift({a}, {b})",
    math.PowFOp: "_m_power({a}, {b})",
    pto.FmodOp: "_np.fmod({a}, {b})",
    math.CopySignOp: "_np.copysign({a}, {b})",
    math.Atan2Op: "_m_arctan2({a}, {b})",
    arith.MinnumfOp: "_np.fmin({a}, {b})",  # the non-NaN operand (IEEE minNum)
    arith.MaxnumfOp: "_np.fmax({a}, {b})",
}

_CMP = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "ult": "<",
        "ule": "<=", "ugt": ">", "uge": ">=", "oeq": "==", "ogt": ">", "oge": ">=", "olt": "<",
        "ole": "<=", "une": "!="}

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
"""`u op x` as `x flipped-op u`."""

_CMP_SIGNED = {"eq", "ne", "slt", "sle", "sgt", "sge"}

_MATH_UNARY: dict[type[Operation], str] = {  # _m_*: through float64, rounded once (exact.py)
    math.ExpOp: "_m_exp", math.LogOp: "_m_log", math.SqrtOp: "_np.sqrt",
    math.TanhOp: "_m_tanh", math.FloorOp: "_np.floor", math.AbsFOp: "_np.abs",
    math.AbsIOp: "_np.abs", math.CeilOp: "_np.ceil", math.SinOp: "_m_sin",
    math.CosOp: "_m_cos", math.Exp2Op: "_m_exp2", math.Log2Op: "_m_log2",
    math.TanOp: "_m_tan", math.SinhOp: "_m_sinh", math.CoshOp: "_m_cosh",
    math.AsinOp: "_m_arcsin", math.AcosOp: "_m_arccos", math.AtanOp: "_m_arctan",
    math.AsinhOp: "_m_arcsinh", math.AcoshOp: "_m_arccosh", math.AtanhOp: "_m_arctanh",
    math.ExpM1Op: "_m_expm1", math.Log10Op: "_m_log10", math.Log1pOp: "_m_log1p",
    math.CbrtOp: "_m_cbrt", math.TruncOp: "_np.trunc", math.RoundEvenOp: "_np.rint",
}

_STORE_UFUNCS: dict[type[Operation], str] = {  # `a op b` computed into the stored slice
    arith.AddfOp: "_np.add", arith.SubfOp: "_np.subtract", arith.MulfOp: "_np.multiply",
    arith.DivfOp: "_np.divide", arith.AddiOp: "_np.add", arith.SubiOp: "_np.subtract",
    arith.MuliOp: "_np.multiply",
}

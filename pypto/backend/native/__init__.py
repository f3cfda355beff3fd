"""The native backend: pto IR compiled to machine code through xDSL's `llvm` dialect and llvmlite.

A kernel the support check (`support.py`) accepts is lowered by three named passes
(`pto-simt-to-lanes`, then xDSL's `convert-scf-to-cf`, then `convert-pto-to-llvm`), translated
to LLVM IR by `xdsl.backend.llvm.convert`, optimised and compiled by llvmlite, and the object
code cached on disk (`jit.py`). The interpreter stays the oracle: a kernel the check rejects runs
there, and the tests compare both backends bit for bit (docs/native.md).
"""

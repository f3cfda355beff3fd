"""A large generated pto module: an unrolled kernel of ids, pointer arithmetic, repeated loads
of the same addresses, lane-dependent `scf.if`s and stores. `test_cse` checks the passes on it;
`bench/opt.py` times `pypto-opt -p canonicalize,cse` on it."""

from __future__ import annotations

CHUNK = """\
    %i{k} = pto.get_global_id 0 : i32
    %c{k} = arith.constant 4 : i32
    %j{k} = arith.addi %i{k}, %c{k} : i32
    %p{k} = pto.addptr %a, %j{k} : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
    %x{k} = pto.load %p{k} : !pto.ptr<f32, global> -> f32
    %y{k} = pto.load %a : !pto.ptr<f32, global> -> f32
    %s{k} = arith.addf %x{k}, %y{k} : f32
    %t{k} = arith.mulf %s{k}, %acc{prev} : f32
    %lt{k} = arith.cmpi slt, %i{k}, %n : i32
    %r{k} = scf.if %lt{k} -> (f32) {{
      %z{k} = pto.load %a : !pto.ptr<f32, global> -> f32
      %u{k} = arith.addf %z{k}, %t{k} : f32
      scf.yield %u{k} : f32
    }} else {{
      scf.yield %t{k} : f32
    }}
    %w{k} = pto.load %b : !pto.ptr<f32, global> -> f32
    %acc{k} = arith.addf %w{k}, %r{k} : f32
"""
CHUNK_OPS = 16  # ops per chunk, counting the scf.if, its terminators and its body

STORE_EVERY = 64
"""A store to HBM at the top level every 64 chunks (~1150 ops): identical loads between two
stores merge, and each merge makes xDSL's CSE rescan every op back to the first of them."""


def module_text(chunks: int) -> str:
    """A kernel of `chunks` unrolled steps accumulating loads, stored every STORE_EVERY steps."""
    body = ["    %acc_init = arith.constant 0.0 : f32\n"]
    for k in range(chunks):
        body.append(CHUNK.format(k=k, prev=k - 1 if k else "_init"))
        if k % STORE_EVERY == STORE_EVERY - 1 or k == chunks - 1:
            body.append(f"    pto.store %acc{k}, %o : f32, !pto.ptr<f32, global>\n")
    return ("func.func @big(%a: !pto.ptr<f32, global>, %b: !pto.ptr<f32, global>, "
            "%o: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {\n"
            + "".join(body) + "    func.return\n}\n")

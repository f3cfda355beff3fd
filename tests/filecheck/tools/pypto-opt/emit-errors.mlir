// Bad cost-output requests are diagnostics (exit 1), never tracebacks.
// RUN: not pypto-opt %s --emit=cost --grid 0 --block 32 2>&1 | filecheck %s --check-prefix=GRID
// RUN: not pypto-opt %s --emit=cost --grid four --block 32 2>&1 | filecheck %s --check-prefix=TEXT
// RUN: not pypto-opt %s --emit=cost --grid 1 --block 32 --arg m=4 2>&1 | filecheck %s --check-prefix=ARG
// RUN: not pypto-opt %s --emit=cost --grid 1 --block 32 --arg a=8 2>&1 | filecheck %s --check-prefix=OOB
// RUN: not pypto-opt %s --emit=cost --grid 1 --block 32 --target %s.missing.toml 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not pypto-opt %s --emit=trace --grid 1 --block 32 --arg n=99999999999999999999 2>&1 | filecheck %s --check-prefix=BIG
// RUN: not pypto-opt %s --emit=cost --grid 1 --block 32 --arg a=-4 2>&1 | filecheck %s --check-prefix=NEG
// RUN: not pypto-opt %s --emit=cost --grid 1 --block 32 --arg a=99999999999999999 2>&1 | filecheck %s --check-prefix=HUGE
// RUN: pypto-opt %s --emit=cost --grid 1 --block 32 --model table | filecheck %s --check-prefix=OK

// GRID: error: cannot emit cost: --grid/--block of kernel 'copy': grid=(0,): the x dimension must be positive, got 0
// TEXT: error: cannot emit cost: --grid takes 1 to 3 positive integers like 4 or 4,2,1; got 'four'
// ARG: error: cannot emit cost: --arg names no parameter of 'copy': m; parameters: a, n
// OOB: error: cannot emit cost: running the kernel on generated inputs failed: {{.*}}out-of-bounds npu.load of HBM buffer 'a' at element 8{{.*}}; give the sizes and values it needs with --arg NAME=VALUE
// TARGET: error: cannot emit cost: {{.*}}cannot read the target file
// BIG: error: cannot emit trace: --arg n=99999999999999999999: does not fit in int64 (the widest kernel integer)
// NEG: error: cannot emit cost: --arg a=-4: a pointer's value is its tensor's element count, which cannot be negative
// HUGE: error: cannot emit cost: --arg a=99999999999999999: a tensor of 99999999999999999 elements cannot be allocated on this machine; give a smaller size
// OK: # modelled by the pypto cost model (not measured): model 'table'
// OK: total_cycles:
// OK-NOT: error

func.func @copy(%a: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
  %i = pto.get_global_id 0 : i32
  %p = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
  %v = pto.load %p : !pto.ptr<f32, global> -> f32
  pto.store %v, %p : f32, !pto.ptr<f32, global>
  func.return
}

"""A hand-written in-register bitonic network, for comparison (docs/native.md#merged-tree-steps).

Bitonic sort of 2^20 float32 keys in blocks of 256, written directly in LLVM IR (not pypto):
each block copied to the output, the steps `j >= 16` of a stage as 16-wide passes over it, the
steps `j <= 8` (with `MINMAX=1`: one permute, `min`, `max` and a blend per 16 keys; else two
shuffles, two compares and selects) on one 16-key vector per group, all stages `k <= 16` in one
pass when the argument is 1. Timed (CPU clock, median of 15) against `np.sort` in the same loop,
checked against it first. Shows how far one pass per stage is from NumPy's in-register sort.

Run:  MINMAX=1 python bench/bitonic_registers.py 1
"""
import ctypes, time, statistics, sys
import numpy as np
import llvmlite.binding as llvm
B = 256
FUSE = int(sys.argv[1]) if len(sys.argv) > 1 else 1
L = []
e = L.append
e("define void @sort(ptr noalias %x, ptr noalias %y, i64 %nb) {")
e("entry:\n  br label %blk")
e("blk:\n  %b = phi i64 [0, %entry], [%b1, %blkend]")
e("  %base = mul i64 %b, 256\n  %src = getelementptr float, ptr %x, i64 %base\n  %s = getelementptr float, ptr %y, i64 %base")
e("  call void @llvm.memcpy.p0.p0.i64(ptr %s, ptr %src, i64 1024, i1 false)")
lab = [0]
def new(p): lab[0] += 1; return f"{p}{lab[0]}"
iota = "<" + ", ".join(f"i32 {i}" for i in range(16)) + ">"
cur = "blk"
import os
MINMAX = os.environ.get("MINMAX") == "1"
def cmpx(v, A, B, k, idxvec, j, tag):
    if MINMAX:  # partner P = v[i ^ j]; lane wants min iff (lower) == (ascending)
        P = f"%{tag}P"
        e(f"  {P} = shufflevector <16 x float> {v}, <16 x float> poison, <16 x i32> <" + ", ".join(f"i32 {i ^ j}" for i in range(16)) + ">")
        e(f"  %{tag}m = and <16 x i32> {idxvec}, splat (i32 {k})")
        e(f"  %{tag}asc = icmp eq <16 x i32> %{tag}m, zeroinitializer")
        lo = "<" + ", ".join(f"i1 {0 if i & j else 1}" for i in range(16)) + ">"
        e(f"  %{tag}wm = icmp eq <16 x i1> %{tag}asc, {lo}")
        e(f"  %{tag}c1 = fcmp olt <16 x float> {P}, {v}\n  %{tag}mn = select <16 x i1> %{tag}c1, <16 x float> {P}, <16 x float> {v}")
        e(f"  %{tag}c2 = fcmp ogt <16 x float> {P}, {v}\n  %{tag}mx = select <16 x i1> %{tag}c2, <16 x float> {P}, <16 x float> {v}")
        e(f"  %{tag}n = select <16 x i1> %{tag}wm, <16 x float> %{tag}mn, <16 x float> %{tag}mx")
        return f"%{tag}n"
    # A: lower element of the pair, B: upper; direction from (idx & k)
    e(f"  %{tag}m = and <16 x i32> {idxvec}, splat (i32 {k})")
    e(f"  %{tag}asc = icmp eq <16 x i32> %{tag}m, zeroinitializer")
    e(f"  %{tag}gt = fcmp ogt <16 x float> {A}, {B}")
    e(f"  %{tag}lt = fcmp olt <16 x float> {A}, {B}")
    e(f"  %{tag}c = select <16 x i1> %{tag}asc, <16 x i1> %{tag}gt, <16 x i1> %{tag}lt")
    up = "<" + ", ".join(f"i1 {1 if i & j else 0}" for i in range(16)) + ">"
    e(f"  %{tag}sw = xor <16 x i1> %{tag}c, {up}")
    e(f"  %{tag}n = select <16 x i1> %{tag}sw, <16 x float> {B}, <16 x float> {A}")
    return f"%{tag}n"
k = 2
while k <= B:
    j = k // 2
    while j >= 16:  # a pass: 16-wide over lower runs
        L0 = new("L"); e(f"  br label %{L0}"); e(f"{L0}:")
        e(f"  %{L0}i = phi i64 [0, %{cur}], [%{L0}i1, %{L0}]")
        # lane index p = 16*i mapped to lower lanes: r = (p / j) * 2j + p % j
        e(f"  %{L0}p = shl i64 %{L0}i, 4")
        e(f"  %{L0}hi = udiv i64 %{L0}p, {j}\n  %{L0}lo = urem i64 %{L0}p, {j}")
        e(f"  %{L0}r0 = mul i64 %{L0}hi, {2*j}\n  %{L0}r = add i64 %{L0}r0, %{L0}lo\n  %{L0}r2 = add i64 %{L0}r, {j}")
        e(f"  %{L0}pa = getelementptr float, ptr %s, i64 %{L0}r\n  %{L0}pb = getelementptr float, ptr %s, i64 %{L0}r2")
        e(f"  %{L0}a = load <16 x float>, ptr %{L0}pa, align 4\n  %{L0}bb = load <16 x float>, ptr %{L0}pb, align 4")
        e(f"  %{L0}t = trunc i64 %{L0}r to i32\n  %{L0}ti = insertelement <16 x i32> poison, i32 %{L0}t, i64 0")
        e(f"  %{L0}ts = shufflevector <16 x i32> %{L0}ti, <16 x i32> poison, <16 x i32> zeroinitializer")
        e(f"  %{L0}idx = add <16 x i32> %{L0}ts, {iota}")
        e(f"  %{L0}m = and <16 x i32> %{L0}idx, splat (i32 {k})\n  %{L0}asc = icmp eq <16 x i32> %{L0}m, zeroinitializer")
        e(f"  %{L0}gt = fcmp ogt <16 x float> %{L0}a, %{L0}bb\n  %{L0}lt = fcmp olt <16 x float> %{L0}a, %{L0}bb")
        e(f"  %{L0}c = select <16 x i1> %{L0}asc, <16 x i1> %{L0}gt, <16 x i1> %{L0}lt")
        e(f"  %{L0}na = select <16 x i1> %{L0}c, <16 x float> %{L0}bb, <16 x float> %{L0}a")
        e(f"  %{L0}nb = select <16 x i1> %{L0}c, <16 x float> %{L0}a, <16 x float> %{L0}bb")
        e(f"  store <16 x float> %{L0}na, ptr %{L0}pa, align 4\n  store <16 x float> %{L0}nb, ptr %{L0}pb, align 4")
        e(f"  %{L0}i1 = add i64 %{L0}i, 1\n  %{L0}d = icmp eq i64 %{L0}i1, {B // 32}")
        L1 = new("E"); e(f"  br i1 %{L0}d, label %{L1}, label %{L0}"); e(f"{L1}:"); cur = L1
        j //= 2
    # j <= 8 tail: one pass over groups of 16 (if FUSE) -- stages k<=16 also fused when FUSE
    if k >= 16 or not FUSE or k == 16:
        ks = [k] if (k > 16 or not FUSE) else [2, 4, 8, 16]
        if not FUSE and k < 16:
            ks = [k]
        G = new("G"); e(f"  br label %{G}"); e(f"{G}:")
        e(f"  %{G}q = phi i64 [0, %{cur}], [%{G}q1, %{G}]")
        e(f"  %{G}pp = getelementptr float, ptr %s, i64 %{G}q\n  %{G}v = load <16 x float>, ptr %{G}pp, align 4")
        e(f"  %{G}t = trunc i64 %{G}q to i32\n  %{G}ti = insertelement <16 x i32> poison, i32 %{G}t, i64 0")
        e(f"  %{G}ts = shufflevector <16 x i32> %{G}ti, <16 x i32> poison, <16 x i32> zeroinitializer")
        e(f"  %{G}idx = add <16 x i32> %{G}ts, {iota}")
        v = f"%{G}v"
        for kk in ks:
            jj = min(kk // 2, 8)
            while jj >= 1:
                tag = new(f"{G}s")
                lo = "<" + ", ".join(f"i32 {i & ~jj}" for i in range(16)) + ">"
                hi = "<" + ", ".join(f"i32 {i | jj}" for i in range(16)) + ">"
                e(f"  %{tag}A = shufflevector <16 x float> {v}, <16 x float> poison, <16 x i32> {lo}")
                e(f"  %{tag}B = shufflevector <16 x float> {v}, <16 x float> poison, <16 x i32> {hi}")
                v = cmpx(v, f"%{tag}A", f"%{tag}B", kk, f"%{G}idx", jj, tag)
                jj //= 2
        e(f"  store <16 x float> {v}, ptr %{G}pp, align 4")
        e(f"  %{G}q1 = add i64 %{G}q, 16\n  %{G}d = icmp eq i64 %{G}q1, {B}")
        E = new("E"); e(f"  br i1 %{G}d, label %{E}, label %{G}"); e(f"{E}:"); cur = E
    k *= 2
e(f"  br label %blkend\nblkend:\n  %b1 = add i64 %b, 1\n  %bd = icmp eq i64 %b1, %nb\n  br i1 %bd, label %out, label %blk")
e("out:\n  ret void\n}")
e("declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
text = "\n".join(L)
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
t = llvm.Target.from_default_triple()
tm = t.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)
mod = llvm.parse_assembly(text); mod.verify()
opts = llvm.PipelineTuningOptions(speed_level=3)
with opts, llvm.create_pass_builder(tm, opts) as pb, pb.getModulePassManager() as pm:
    pm.run(mod, pb)
ee = llvm.create_mcjit_compiler(mod, tm); ee.finalize_object()
f = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(ee.get_function_address("sort"))
n = 1 << 20
rng = np.random.default_rng(0)
def al(a):
    buf = np.empty(a.size + 16, np.float32); off = (-buf.ctypes.data % 64) // 4
    out = buf[off:off + a.size]; out[:] = a; return out
x = al(rng.standard_normal(n).astype(np.float32)); y = al(np.zeros(n, np.float32))
f(x.ctypes.data, y.ctypes.data, n // B)
assert np.array_equal(y, np.sort(x.reshape(-1, B), axis=1).reshape(-1)), "WRONG"
ts, ns = [], []
for _ in range(15):
    t0 = time.process_time(); f(x.ctypes.data, y.ctypes.data, n // B); ts.append(time.process_time() - t0)
    t0 = time.process_time(); np.sort(x.reshape(-1, B), axis=1); ns.append(time.process_time() - t0)
print(f"FUSE={FUSE}: proto {statistics.median(ts)*1e3:.3f} ms [{min(ts)*1e3:.3f}-{max(ts)*1e3:.3f}], np.sort {statistics.median(ns)*1e3:.3f} ms [{min(ns)*1e3:.3f}-{max(ns)*1e3:.3f}]")

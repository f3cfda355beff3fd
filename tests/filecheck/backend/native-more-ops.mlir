// RUN: pypto-opt %s --emit=llvm | filecheck %s

// convert-pto-to-llvm on the forms of pypto/backend/native/atomics.py, numpy_math.py,
// int_pow.py and bf16.py: an atomic max is load, IEEE maximum, store; exp calls NumPy's own
// float64 loop (an external symbol bound at load) through a helper; integer ** checks its
// exponent (error code 7) and multiplies; a bfloat16 value is its i16 bits, widened to float.
builtin.module {
  func.func @k(%a: !pto.ptr<f32, global> {pto.noalias}, %m: !pto.ptr<f32, global> {pto.noalias}, %b: !pto.ptr<bf16, global> {pto.noalias}, %o: !pto.ptr<i32, global> {pto.noalias}, %n: i32) attributes {pto.kernel} {
    %i = pto.get_global_id 0 : i32
    %c = arith.cmpi slt, %i, %n : i32
    scf.if %c {
      %p = pto.addptr %a, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      %x = pto.load %p : !pto.ptr<f32, global> -> f32
      %e = math.exp %x : f32
      %zero = arith.constant 0 : i32
      %q = pto.addptr %m, %zero : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      %old = pto.atomic_max %q, %e : !pto.ptr<f32, global>, f32
      %pb = pto.addptr %b, %i : !pto.ptr<bf16, global>, i32 -> !pto.ptr<bf16, global>
      %h = pto.load %pb : !pto.ptr<bf16, global> -> bf16
      %hh = arith.addf %h, %h : bf16
      pto.store %hh, %pb : bf16, !pto.ptr<bf16, global>
      %r = math.ipowi %i, %n : i32
      %po = pto.addptr %o, %i : !pto.ptr<i32, global>, i32 -> !pto.ptr<i32, global>
      pto.store %r, %po : i32, !pto.ptr<i32, global>
    }
    func.return
  }
}

// CHECK-DAG: declare void @"pypto_numpy_exp"(ptr {{.*}}, ptr {{.*}}, ptr {{.*}}, ptr {{.*}})
// CHECK-DAG: define {{.*}}double @"pypto.numpy.exp"(double {{.*}})
// CHECK:     call {{.*}}void @"pypto_numpy_exp"
// CHECK:     define internal i32 @"k.lane"
// CHECK:     call {{.*}}double @"pypto.numpy.exp"
// CHECK:     call float @"llvm.maximum.f32"
// CHECK:     load i16
// CHECK:     shl i32
// CHECK:     fadd float
// CHECK:     store i16
// CHECK:     store i64 7

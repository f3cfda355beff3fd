// --emit=cost on IR that carries the launch pto.compile recorded (pto.launch) takes the block and
// the arguments from it: the same figure as the same launch given with --block and --arg.
// RUN: pypto-opt %s --emit=cost --grid 4 > %t.recorded
// RUN: filecheck %s --input-file %t.recorded
// RUN: pypto-opt %s --emit=cost --grid 4 --block 64 --arg x=512 --arg y=512 --arg n=512 > %t.given
// RUN: grep total_cycles %t.recorded > %t.recorded.total
// RUN: grep total_cycles %t.given > %t.given.total
// RUN: diff %t.recorded.total %t.given.total
// What the command line gives wins over the record: --block 1 costs another launch.
// RUN: pypto-opt %s --emit=cost --grid 4 --block 1 | filecheck %s --check-prefix=BLOCK

// CHECK: # from the launch pto.compile recorded (pto.launch): block=64,1,1 x=512 y=512 n=512
// CHECK: total_cycles: {{[0-9]+}}
// BLOCK: # from the launch pto.compile recorded (pto.launch): x=512 y=512 n=512
// BLOCK: 4 block(s)
builtin.module attributes {pto.launch = {block = array<i64: 64, 1, 1>, args = {x = 512 : i64, y = 512 : i64, n = 512 : i64}}} {
  func.func @scale(%x: !pto.ptr<f32, global>, %y: !pto.ptr<f32, global>, %n: i32) attributes {pto.kernel} {
    %i = pto.get_global_id 0 : i32
    %in = arith.cmpi slt, %i, %n : i32
    scf.if %in {
      %p = pto.addptr %x, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      %v = pto.load %p : !pto.ptr<f32, global> -> f32
      %w = arith.addf %v, %v : f32
      %q = pto.addptr %y, %i : !pto.ptr<f32, global>, i32 -> !pto.ptr<f32, global>
      pto.store %w, %q : f32, !pto.ptr<f32, global>
    }
    func.return
  }
}

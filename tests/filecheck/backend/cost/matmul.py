# RUN: %python %s | filecheck %s
# Golden timelines of the article's pipelined matmul (examples/pipeline_matmul.py, single-
# buffered), one 64x64
# tile of C over K = 128 (two k-steps), under both models. 'fused': the B tile's load is fused
# into its MMA (LOAD_MMA on the CUBE pipe), the A tile's stays a COPY_IN on MTE_IN. 'table': two
# ASYNC_LOADs, a WAIT_ALL stall, an MMA of 8 + 127 cycles (262144 FP32 MACs at 2048 per cycle).
import sys
from pathlib import Path

import numpy as np

import pypto as pto

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples"))
from pipeline_matmul import matmul_tile  # noqa: E402

m = n = 64
k = 128
tensors = [pto.alloc_tensor(size * 4, dtype=np.float32) for size in (m * k, k * n, m * n)]
# single-buffered (the default pipeline without pto-double-buffer), so the B load can fuse
single = {"fused": "pto-allocate-l1,pto-verify-barriers,convert-pto-to-npu,npu-fuse-load-mma",
          "table": "pto-allocate-l1,pto-verify-barriers"}
for model in ("fused", "table"):
    prof = pto.profile(matmul_tile, grid=(1, 1), block=64,
                       args=(*tensors, m, n, k, 64, 64, 64), model=model, pipeline=single[model])
    print(prof.to_text(max_instructions=40))

# CHECK:      # modelled by the pypto cost model (not measured): model 'fused'
# The launch's fixed 1000 cycles and the block's 16-cycle start come first.
# CHECK:      Total: matmul_tile: 2771 cycles, bound by compute (compute 1771 cycles
# CHECK:      Cycle 4: Lane 0-63: FILL
# CHECK:      Cycle 8: Lane 0-63: COPY_IN
# The fused load+MMA occupies the CUBE until its copy's last byte has landed (347 cycles: HBM's
# latency 200 (the same a lane load pays) + the copy engine's start-up 20 + 16384 / 128 - 1,
# longer than its 64x64x64 FP32 MMA, 5 + 127) and MTE_IN for its bytes (128); the front end
# waits for that copy as for the wait the fusion absorbed (docs/cost-model.md).
# CHECK:      Cycle 358: Lane 0-63: LOAD_MMA
# CHECK-NEXT: Cycle 358: Lane 0-63: LOAD_MMA (its copy on MTE_IN)
# CHECK-NEXT: Cycle 705: Lane 0-63: MULI
# CHECK:      Cycle 708: Lane 0-63: COPY_IN
# CHECK:      Cycle 1058: Lane 0-63: LOAD_MMA
# CHECK:      Cycle 1408: Lane 0-63: COPY_OUT
# CHECK:      Cycle breakdown (whole launch):
# CHECK-NEXT:   LOAD_MMA: 5 cycles (x2 on CUBE, 694 pipe cycles)
# CHECK-NEXT:   COPY_IN: 20 cycles (x2 on MTE_IN, 256 pipe cycles)
# CHECK-NEXT:   COPY_OUT: 20 cycles (x1 on MTE_OUT, 128 pipe cycles)
# The second k-step's A copy is issued once the first LOAD_MMA's B copy has landed (the front
# end stalls on it: "the fused load"), and the CUBE idles for that A copy; a copy holds MTE_IN
# for its bytes (128 cycles) and its data lands after HBM's 200 cycles and the 20-cycle start-up.
# CHECK:      Bubbles (9):
# CHECK-NEXT:   CUBE idle for 353 cycles (705-1058) before LOAD_MMA at {{.*}}pipeline_matmul.py:{{[0-9:]+}}: wait for async copy token 2 (COPY_IN at {{.*}}pipeline_matmul.py:{{[0-9:]+}})
# CHECK-NEXT:   SCALAR idle for 347 cycles (8-355) before MULI
# CHECK-NEXT:   SCALAR idle for 347 cycles (358-705) before MULI at {{.*}}pipeline_matmul.py:{{[0-9:]+}}: wait for async copy token of the fused load (LOAD_MMA at {{.*}}pipeline_matmul.py:{{[0-9:]+}})
# CHECK-NEXT:   SCALAR idle for 347 cycles (708-1055) before MULI at {{.*}}pipeline_matmul.py:{{[0-9:]+}}: wait for async copy token 2
# CHECK-NEXT:   SCALAR idle for 347 cycles (1058-1405) before MULI
# CHECK-NEXT:   MTE_IN idle for 222 cycles (486-708) before COPY_IN at {{.*}}pipeline_matmul.py:{{[0-9:]+}}: wait for async copy token of the fused load
# CHECK-NEXT:   MTE_OUT idle for 1408 cycles (0-1408) before COPY_OUT (its first) at {{.*}}pipeline_matmul.py:{{[0-9:]+}}: wait for async copy token of the fused load

# CHECK:      # modelled by the pypto cost model (not measured): model 'table'
# CHECK:      Total: matmul_tile: 2591 cycles, bound by compute
# CHECK:      Cycle 8: Lane 0-63: ASYNC_LOAD
# CHECK:      Cycle 136: Lane 0-63: ASYNC_LOAD
# CHECK:      Cycle 483: Lane 0-63: MMA
# CHECK:      Cycle 618: Lane 0-63: ASYNC_LOAD
# CHECK:      Cycle 746: Lane 0-63: ASYNC_LOAD
# CHECK:      Cycle 1093: Lane 0-63: MMA
# CHECK:      Cycle 1228: Lane 0-63: TILE_STORE
# CHECK:      Cycle breakdown (whole launch):
# CHECK-NEXT:   ASYNC_LOAD: 20 cycles (x4 on MTE_IN, 512 pipe cycles)
# CHECK-NEXT:   MMA: 8 cycles (x2 on CUBE, 270 pipe cycles)

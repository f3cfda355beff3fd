"""`pto.autotune` (docs/autotune.md): configs, rejections with their reasons, the interpreter check,
executors, the disk cache, the progress bar and the plot."""

from __future__ import annotations

import concurrent.futures as cf
import pickle
import sys

import numpy as np
import pytest

import pypto as pto
from pypto.passes import parse_pipeline
from pypto.tuning import TuneResult, default_cache_dir
from pypto.tuning.autotune import with_options
from pypto.tuning.shipping import HostArgs, KernelRef, kernel_fingerprint, read_back, snapshot
from pypto.tuning.worker import compare
from tests.tuning.kernels import scale, tiled_matmul

M, N, K = 128, 128, 256

CONFIGS = [
    dict(tile_m=64, tile_n=64, tile_k=32, stages=2),     # 0: the reference
    dict(tile_m=64, tile_n=64, tile_k=64, stages=2),     # 1
    dict(tile_m=96, tile_n=128, tile_k=32, stages=2),    # 2: the floor grid misses rows 96..127
    dict(tile_m=128, tile_n=128, tile_k=0, stages=1),    # 3: range() step 0
    dict(tile_m=128, tile_n=128, tile_k=384, stages=1),  # 4: 256 KiB of tiles
    dict(tile_m=64, tile_n=64, tile_k=192, stages=1),    # 5: the last k-tile reads past A
]
EXPECTED = ["ok", "ok", "wrong results", "does not compile", "L1 too small",
            "fails at run time"]


def grid_of(c: dict) -> tuple[int, int]:
    return (N // c["tile_n"], M // c["tile_m"])  # floor: a tile that does not divide drops rows


class Inputs:
    def __init__(self) -> None:
        rng = np.random.default_rng(7)
        self.a = rng.standard_normal((M, K)).astype(np.float16)
        self.b = rng.standard_normal((K, N)).astype(np.float16)
        self.d_a = pto.alloc_tensor(self.a.nbytes, dtype=np.float16)
        self.d_b = pto.alloc_tensor(self.b.nbytes, dtype=np.float16)
        self.d_c = pto.alloc_tensor(M * N * 4, dtype=np.float32)
        pto.memcpy_h2d(self.d_a, self.a)
        pto.memcpy_h2d(self.d_b, self.b)
        pto.memcpy_h2d(self.d_c, np.full(M * N, -1.0, np.float32))
        self.args = (self.d_a, self.d_b, self.d_c, M, N, K)

    def c(self) -> np.ndarray:
        out = np.empty(M * N, np.float32)
        pto.memcpy_d2h(out, self.d_c)
        return out.reshape(M, N)


@pytest.fixture(scope="module")
def inputs() -> Inputs:
    return Inputs()


def tune(inputs: Inputs, configs: list[dict] = CONFIGS, **options) -> TuneResult:
    options.setdefault("cache", False)
    return pto.autotune(tiled_matmul, configs, grid=grid_of, block=64, args=inputs.args,
                        **options)


@pytest.fixture(scope="module")
def swept(inputs: Inputs) -> TuneResult:
    return tune(inputs, check="all")


def test_every_config_is_listed_with_its_status_and_reason(swept: TuneResult) -> None:
    table = swept.table()
    assert [row["status"] for row in table] == EXPECTED
    assert [row["config"] for row in table] == CONFIGS
    reasons = [row["reason"] for row in table]
    assert reasons[0] == reasons[1] == ""
    # the first element the floor grid leaves unwritten is row 96, column 0
    assert "tensor 'C' (argument 2) element 12288 is -1.0" in reasons[2]
    assert "range()" in reasons[3] and "kernels.py" in reasons[3]
    assert "262144 bytes of L1" in reasons[4]
    assert "out-of-bounds" in reasons[5] and "'A'" in reasons[5]
    assert [row["check"] for row in table][:3] == ["reference", "passed", "failed"]
    # 2 slots of A, 2 of B (pto-double-buffer's cheapest schedule under the model prefetches
    # both: docs/passes.md#choosing-by-the-cost-model), and C
    assert table[0]["l1_peak"] == 2 * (64 * 32 * 2) + 2 * (32 * 64 * 2) + 64 * 64 * 4
    text = str(table)
    assert "rejected:" in text and "#4 L1 too small" in text


def test_the_winner_is_the_fastest_valid_config_as_pto_profile_models_it(
        swept: TuneResult) -> None:
    inputs = Inputs()  # pto.profile writes its outputs: not into the shared inputs
    ok = [r for r in swept.records if r.ok]
    assert swept.cycles == min(r.cycles for r in ok)
    assert swept.config == CONFIGS[swept.winner.index]
    for r in ok:  # the cycles are pto.profile's for the same launch and pipeline
        c = r.config
        prof = pto.profile(tiled_matmul, grid=grid_of(c), block=64,
                           args=(*inputs.args, c["tile_m"], c["tile_n"], c["tile_k"]),
                           pipeline=with_options(
                               "pto-double-buffer,pto-allocate-l1,pto-verify-barriers,"
                               "convert-pto-to-npu,npu-fuse-load-mma",
                               {("pto-double-buffer", "stages"): c["stages"]}))
        assert r.cycles == prof.total_cycles
        assert r.bound


def test_launch_args_run_the_winner_and_autotune_does_not_write_the_users_tensors(
        swept: TuneResult, inputs: Inputs) -> None:
    assert np.all(inputs.c() == -1.0)  # profiling ran on copies
    la = swept.launch_args
    assert set(la) == {"grid", "block", "args", "pipeline"}
    assert la["args"][:6] == inputs.args
    assert la["args"][6:] == tuple(swept.config[k] for k in ("tile_m", "tile_n", "tile_k"))
    assert parse_pipeline(la["pipeline"])[0].stages == swept.config["stages"]
    pto.launch(tiled_matmul, **la)
    ref = inputs.a.astype(np.float32) @ inputs.b.astype(np.float32)
    np.testing.assert_allclose(inputs.c(), ref, rtol=1e-4, atol=1e-4)
    pto.memcpy_h2d(inputs.d_c, np.full(M * N, -1.0, np.float32))


def test_check_winner_rejects_a_wrong_winner_and_checks_the_next_best(inputs: Inputs) -> None:
    # (tile_k 128: two k-steps, each paying HBM's latency for its copies; the cheapest config)
    configs = [dict(tile_m=128, tile_n=128, tile_k=32), dict(tile_m=96, tile_n=96, tile_k=128),
               dict(tile_m=128, tile_n=128, tile_k=64), dict(tile_m=128, tile_n=128, tile_k=128)]
    r = tune(inputs, configs)
    rows = r.table()
    wrong = rows[1]  # one 96x96 tile: cheapest, and wrong from column 96 of row 0 on
    assert wrong["cycles"] == min(row["cycles"] for row in rows)
    assert wrong["status"] == "wrong results" and wrong["check"] == "failed"
    assert "element 96 is -1.0" in wrong["reason"]
    survivors = sorted((row["cycles"], row["index"]) for row in rows if row["status"] == "ok")
    assert r.winner.index == survivors[0][1]
    checked = {row["index"]: row["check"] for row in rows}
    assert checked[0] == "reference" and checked[r.winner.index] in ("passed", "reference")
    assert [checked[i] for i in (2, 3) if i != r.winner.index] == [""]  # never run
    assert r.stats.checks == (1 if r.winner.index == 0 else 2)


def test_no_valid_config_is_an_error_that_lists_the_reasons(inputs: Inputs) -> None:
    with pytest.raises(pto.PtoError, match=r"none of the 2 configs is valid") as info:
        tune(inputs, [CONFIGS[3], CONFIGS[4]])
    assert "range()" in str(info.value) and "L1 too small" in str(info.value)


def test_usage_errors(inputs: Inputs) -> None:
    with pytest.raises(pto.UsageError, match="configs is empty"):
        tune(inputs, [])
    with pytest.raises(pto.UsageError, match=r"'tile_x'.*neither a parameter"):
        tune(inputs, [dict(tile_m=64, tile_n=64, tile_k=32, tile_x=1)])
    with pytest.raises(pto.UsageError, match="check must be one of"):
        tune(inputs, CONFIGS[:1], check="some")
    with pytest.raises(pto.PtoError, match="unknown cost model"):
        tune(inputs, CONFIGS[:1], model="guess")
    with pytest.raises(pto.LaunchError, match=r"give the 6 parameters .*A, B, C, M, N, K"):
        pto.autotune(tiled_matmul, CONFIGS[:1], grid=grid_of, block=64, args=inputs.args[:5],
                     cache=False)
    with pytest.raises(pto.UsageError, match="has no option 'slots'"):
        tune(inputs, [dict(tile_m=64, tile_n=64, tile_k=32, **{"pto-double-buffer.slots": 2})])
    with pytest.raises(pto.UsageError, match="has no pass 'cse'"):
        tune(inputs, [dict(tile_m=64, tile_n=64, tile_k=32, **{"cse.x": 1})])
    with pytest.raises(pto.UsageError, match="executor must be"):
        tune(inputs, CONFIGS[:1], executor="threads")


def test_all_arguments_may_be_given_and_configs_replace_theirs(inputs: Inputs) -> None:
    r = pto.autotune(tiled_matmul, CONFIGS[:2], grid=grid_of, block=(64, 1),
                     args=(*inputs.args, 0, 0, 0), cache=False)
    assert r.launch_args["args"][6:] == tuple(r.config[k] for k in ("tile_m", "tile_n",
                                                                     "tile_k"))
    assert r.launch_args["block"] == (64, 1, 1)


def test_pass_options_in_the_dotted_form_and_with_options() -> None:
    assert with_options("pto-double-buffer,pto-allocate-l1",
                        {("pto-double-buffer", "stages"): 3}) == \
        "pto-double-buffer{stages=3},pto-allocate-l1"
    assert with_options("a-b", {}) == "a-b"


def test_dotted_pass_option_is_the_stages_alias(inputs: Inputs) -> None:
    dotted = [dict(tile_m=64, tile_n=64, tile_k=32, **{"pto-double-buffer.stages": s})
              for s in (1, 2)]
    r = tune(inputs, dotted)
    plain = tune(inputs, [dict(tile_m=64, tile_n=64, tile_k=32, stages=s) for s in (1, 2)])
    assert [x.cycles for x in r.records] == [x.cycles for x in plain.records]
    assert r.launch_args["pipeline"] == plain.launch_args["pipeline"]


def test_a_bad_launch_shape_rejects_the_config_only(inputs: Inputs) -> None:
    r = pto.autotune(tiled_matmul, CONFIGS[:2], grid=grid_of,
                     block=lambda c: 2048 if c["tile_k"] == 64 else 64, args=inputs.args,
                     cache=False)
    assert [x.status for x in r.records] == ["ok", "bad launch"]
    assert "2048 lanes" in r.records[1].reason


# --- executors ----------------------------------------------------------------------------------

def test_thread_and_process_pools_give_the_same_table(swept: TuneResult, inputs: Inputs) -> None:
    with cf.ThreadPoolExecutor(2) as ex:
        threads = tune(inputs, check="all", executor=ex)
    with cf.ProcessPoolExecutor(2) as ex:
        processes = tune(inputs, check="all", executor=ex)
    assert threads.table() == swept.table() == processes.table()
    assert str(threads.table()) == str(swept.table()) == str(processes.table())
    assert threads.launch_args == swept.launch_args == processes.launch_args


def test_a_dask_local_cluster_gives_the_same_table(swept: TuneResult, inputs: Inputs) -> None:
    distributed = pytest.importorskip("distributed")
    # a hung cluster fails the test after 5 minutes (closing the cluster, before the watchdog
    # thread is joined, ends the sweep)
    with cf.ThreadPoolExecutor(1) as watchdog, \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None, timeout="60s") as cluster, \
            distributed.Client(cluster, timeout="60s") as client:
        dask = watchdog.submit(tune, inputs, check="all",
                               executor=client.get_executor()).result(timeout=300)
    assert dask.table() == swept.table()
    assert str(dask.table()) == str(swept.table())


def test_a_kernel_is_found_in_a_worker_by_module_and_source() -> None:
    ref = KernelRef.of(scale)
    elsewhere = KernelRef("another-process", ref.module, ref.qualname, ref.filename,
                          ref.source, ref.name)
    assert elsewhere.resolve() is scale
    skewed = KernelRef("another-process", ref.module, ref.qualname, ref.filename,
                       ref.source.replace("unroll", "unrolled"), ref.name)
    with pytest.raises(pto.PtoError, match="another source"):
        skewed.resolve()

    @pto.kernel
    def local(x):
        pto.store(x, 1.0)

    inner = KernelRef.of(local)
    assert inner.resolve() is local  # in this process: the live object
    moved = KernelRef("another-process", inner.module, inner.qualname, inner.filename,
                      inner.source, inner.name)
    with pytest.raises(pto.PtoError, match="define it at module level"):
        moved.resolve()


def test_a_kernel_of_a_script_is_loaded_from_its_file_without_running_its_main(tmp_path) -> None:
    script = tmp_path / "tune_me.py"
    script.write_text(
        "import pypto as pto\n\n"
        "@pto.kernel\ndef k(x):\n    pto.store(x, 1.0)\n\n"
        "if __name__ == '__main__':\n    open(__file__ + '.ran', 'w').close()\n")
    source = "@pto.kernel\ndef k(x):\n    pto.store(x, 1.0)\n"
    ref = KernelRef("another-process", "__main__", "k", str(script), source, "k")
    found = ref.resolve()
    assert isinstance(found, pto.Kernel) and found.source.filename == str(script)
    assert not (tmp_path / "tune_me.py.ran").exists()
    assert ref.resolve() is found  # loaded once per process


# --- the disk cache -----------------------------------------------------------------------------

def scale_inputs(n: int = 1000) -> tuple:
    x = pto.alloc_tensor(n * 4)
    y = pto.alloc_tensor(n * 4)
    pto.memcpy_h2d(x, np.arange(n, dtype=np.float32))
    return x, y, n


def scale_tune(args: tuple, configs: list[dict], **options) -> TuneResult:
    return pto.autotune(scale, configs, grid=lambda c: -(-args[2] // (64 * c["unroll"])),
                        block=64, args=(*args, 2.0), **options)


def test_a_rerun_takes_every_result_from_the_cache_and_profiles_only_what_changed(
        tmp_path) -> None:
    args = scale_inputs()
    configs = [dict(unroll=u) for u in (1, 2, 4)]
    first = scale_tune(args, configs, cache=tmp_path, check="all")
    assert (first.stats.profiled, first.stats.cached, first.stats.checks) == (3, 0, 2)
    again = scale_tune(args, configs, cache=tmp_path, check="all")
    assert (again.stats.profiled, again.stats.cached, again.stats.checks) == (0, 3, 0)
    assert again.table() == first.table()
    more = scale_tune(args, configs + [dict(unroll=8)], cache=tmp_path, check="all")
    assert (more.stats.profiled, more.stats.cached) == (1, 3)
    pto.memcpy_h2d(args[0], np.ones(args[2], dtype=np.float32))  # other input data
    assert scale_tune(args, configs, cache=tmp_path).stats.profiled == 3
    target = tmp_path / "slow.toml"
    target.write_text("[cost.fused.latency]\nLOAD = 40\n")
    other = scale_tune(args, configs, cache=tmp_path, target=str(target))
    assert other.stats.profiled == 3 and other.cycles > first.cycles
    assert scale_tune(args, configs, cache=tmp_path, model="table").stats.profiled == 3
    assert scale_tune(args, configs, cache=False).stats.cached == 0


def test_the_cache_directory(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c" / "autotune"
    monkeypatch.delenv("PYPTO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == tmp_path / "x" / "pypto" / "autotune"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "env"))
    args = scale_inputs()
    scale_tune(args, [dict(unroll=1)], cache=True)
    assert list((tmp_path / "env" / "autotune").rglob("*.json"))


def test_the_fingerprint_follows_the_source_and_the_constants_a_kernel_names(tmp_path,
                                                                             monkeypatch) -> None:
    module = tmp_path / "fp_kernels.py"
    module.write_text(
        "import pypto as pto\nFACTOR = 2.0\n\n"
        "def helper(v):\n    return v * FACTOR\n\n"
        "@pto.kernel\ndef k(x):\n    pto.store(x, helper(pto.load(x)))\n\n"
        "@pto.kernel\ndef same(x):\n    pto.store(x, helper(pto.load(x)))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import fp_kernels

    before = kernel_fingerprint(fp_kernels.k)
    assert kernel_fingerprint(fp_kernels.k) == before
    assert kernel_fingerprint(fp_kernels.same) != before  # another name, another source
    monkeypatch.setattr(fp_kernels, "FACTOR", 3.0)  # a constant the helper names
    assert kernel_fingerprint(fp_kernels.k) != before


# --- comparison, progress, plot -------------------------------------------------------------------

def test_aliased_tensor_arguments_stay_one_tensor_in_a_worker() -> None:
    x, _, n = scale_inputs(64)
    ref = KernelRef.of(scale)
    base = snapshot(scale, [x, x, n, 2.0, 1])
    assert base[0] is base[1]
    job = pickle.loads(pickle.dumps(HostArgs(tuple(base))))  # as an executor ships it
    with job.on_device() as args:
        assert args[0] is args[1] and args[0] is not x
        scale_run = pto.compile(ref.resolve(), args=args, block=64)
        scale_run.execute((1, 1, 1), (64, 1, 1), args)
        out = read_back(args)
    assert np.array_equal(out[0], np.arange(n, dtype=np.float32) * 2)
    host = np.arange(4, dtype=np.float32)
    shipped = snapshot(scale, [host, host, 4, 2.0, 1])  # a NumPy array: copied, aliasing kept
    assert shipped[0] is shipped[1] and np.array_equal(shipped[0].data, host)
    host[0] = 7.0
    assert shipped[0].data[0] == 0.0  # a copy: autotune never writes the caller's array
    with pytest.raises(pto.LaunchError, match="NumPy complex128 array"):
        snapshot(scale, [np.zeros(4, np.complex128), x, n, 2.0, 1])


def test_compare_names_the_first_differing_element() -> None:
    tol = {"float32": (1e-6, 1e-6)}
    a = np.array([1.0, 2.0, np.nan, 4.0], np.float32)
    assert compare(a, a.copy(), tol, "y", 1, {}) == ""
    b = a.copy()
    b[3] = 4.5
    b[1] = 2.0 + 1e-7
    assert "element 3 is 4.5" in compare(b, a, tol, "y", 1, {"u": 1})
    ints = np.array([1, 2, 3], np.int32)
    assert "element 1 is 5" in compare(np.array([1, 5, 7], np.int32), ints, tol, "y", 0, {})


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys) -> None:
    pytest.importorskip("tqdm")
    args = scale_inputs()
    scale_tune(args, [dict(unroll=1)], cache=False)  # stderr is not a terminal here
    assert "autotune scale" not in capsys.readouterr().err
    scale_tune(args, [dict(unroll=1), dict(unroll=2)], cache=False, progress=True)
    assert "autotune scale" in capsys.readouterr().err


def test_plot_draws_a_png(swept: TuneResult, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    path = swept.plot(tmp_path / "tune.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(swept: TuneResult, tmp_path,
                                                        monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(pto.UsageError, match=r"pypto\[plot\]"):
        swept.plot(tmp_path / "x.png")


def test_launch_takes_a_pipeline() -> None:
    x, y, n = scale_inputs(64)
    pto.launch(scale, grid=1, block=64, args=(x, y, n, 3.0, 1), pipeline="canonicalize")
    out = np.empty(n, np.float32)
    pto.memcpy_d2h(out, y)
    assert np.array_equal(out, np.arange(n, dtype=np.float32) * 3)
    with pytest.raises(pto.CompileError, match="bad pipeline"):
        pto.launch(scale, grid=1, block=64, args=(x, y, n, 3.0, 1), pipeline="no-such-pass")


def test_a_config_that_only_sums_in_another_order_is_not_wrong() -> None:
    """Issue 31: tile_k=128 sums K=512 in another order than the reference's tile_k=32; one
    element differs from the reference's by more than rtol 1e-4 / atol 1e-5, yet both are within
    K * eps * max|C| of the exact float64 product, so the faster config is accepted."""
    m = n = 128
    k = 512
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    d_a = pto.alloc_tensor(a.nbytes, dtype=np.float16)
    d_b = pto.alloc_tensor(b.nbytes, dtype=np.float16)
    d_c = pto.alloc_tensor(m * n * 4, dtype=np.float32)
    pto.memcpy_h2d(d_a, a)
    pto.memcpy_h2d(d_b, b)
    configs = [dict(tile_m=64, tile_n=64, tile_k=32), dict(tile_m=64, tile_n=64, tile_k=128)]
    r = pto.autotune(tiled_matmul, configs, grid=lambda c: (n // c["tile_n"], m // c["tile_m"]),
                     block=64, args=(d_a, d_b, d_c, m, n, k), check="all", cache=False)
    assert [row["status"] for row in r.table()] == ["ok", "ok"]
    # (which one wins is the cost model's business: pto-double-buffer chooses each config's
    # schedule by it, docs/passes.md#choosing-by-the-cost-model)
    pto.launch(tiled_matmul, **r.launch_args)
    got = np.empty(m * n, np.float32)
    pto.memcpy_d2h(got, d_c)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(got.reshape(m, n) - exact).max()
    assert err <= k * np.finfo(np.float32).eps * np.abs(exact).max()
    # the same sums in NumPy, tile_k 32 vs 128: the old per-element rule tells them apart
    def chunked(tk: int) -> np.ndarray:
        c = np.zeros((m, n), np.float32)
        for k0 in range(0, k, tk):
            c += a[:, k0:k0 + tk].astype(np.float32) @ b[k0:k0 + tk].astype(np.float32)
        return c.ravel()  # flat, as the check reads tensors back
    assert not np.isclose(chunked(128), chunked(32), rtol=1e-4, atol=1e-5).all()
    assert compare(chunked(128), chunked(32), {"float32": (1e-4, 1e-5)}, "C", 2, {}, k) == ""
    wrong = chunked(128)
    wrong[5 * n + 7] += 0.05  # a real error: far beyond 2 * K * eps * max|C|
    assert "element 647" in compare(wrong, chunked(32), {"float32": (1e-4, 1e-5)}, "C", 2, {}, k)


def test_reduction_must_be_a_positive_int(inputs: Inputs) -> None:
    with pytest.raises(pto.UsageError, match="reduction must be a positive int"):
        tune(inputs, CONFIGS[:1], reduction=0)

"""Every PYPTO_* environment setting (pypto/settings.py, docs/settings.md): a value it does not
take raises a `UsageError` naming the variable, the value and the values it takes, where the
setting is read — never a silent fall-back to the default; the command line tools print it as
one error line; the values it takes still work; the docs' table is the registry's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import pypto as pto
from pypto import settings
from pypto.errors import LaunchError, UsageError

ROOT = Path(__file__).resolve().parents[1]


@pto.kernel
def double(o, n):
    i = pto.get_global_id()
    if i < n:
        pto.store(o + i, pto.load(o + i) * 2.0)


def _refused(name: str, value: str, takes: str):
    """`pytest.raises` of the setting's error: the variable, the value, what it takes."""
    return pytest.raises(UsageError, match=rf"environment setting {name}={re.escape(repr(value))} "
                                           rf"is not a value it takes: it takes {re.escape(takes)}")


@pytest.fixture
def ones() -> pto.Tensor:
    return pto.tensor(np.ones(64, np.float32))


def test_the_docs_table_is_the_registry():
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings.table() in text


def test_every_pypto_variable_the_package_names_is_registered():
    """Each `"PYPTO_..."` string of the package (the names its code reads) has a registry
    entry, and so a check and a row in docs/settings.md."""
    named = set()
    for path in (ROOT / "pypto").rglob("*.py"):
        named |= set(re.findall(r"[\"'](PYPTO_[A-Z_]+)[\"']", path.read_text(encoding="utf-8")))
    assert named and named <= set(settings.SETTINGS), named - set(settings.SETTINGS)


@pytest.mark.parametrize("value", ["nativ", "gpu", "1"])
def test_backend_raises_at_the_launch_line(monkeypatch, ones, value):
    monkeypatch.setenv("PYPTO_BACKEND", value)
    pending = ones.device.default_stream.pending
    with _refused("PYPTO_BACKEND", value, "interpreter, native, auto or tiered") as info:
        pto.launch(double, grid=1, block=64, args=(ones, 64))
    assert info.value.__traceback__.tb_frame.f_code.co_filename == __file__  # the user's line
    assert ones.device.default_stream.pending == pending  # nothing was enqueued
    with _refused("PYPTO_BACKEND", value, "interpreter"):
        double[1, 64](ones, 64)
    monkeypatch.setenv("PYPTO_BACKEND", " Interpreter ")  # any case, spaces around
    pto.launch(double, grid=1, block=64, args=(ones, 64))
    pto.sync()
    assert ones.numpy().tolist() == [2.0] * 64


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "1s"])
def test_native_after_raises_at_a_tiered_launch(monkeypatch, ones, value):
    monkeypatch.setenv("PYPTO_BACKEND", "tiered")
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", value)
    with _refused("PYPTO_NATIVE_AFTER", value, "a number of seconds >= 0, inf or never"):
        pto.launch(double, grid=1, block=64, args=(ones, 64))
    pto.launch(double, grid=1, block=64, args=(ones, 64), backend="interpreter")  # not read
    pto.sync()
    assert ones.numpy().tolist() == [2.0] * 64


@pytest.mark.parametrize("value, seconds", [("never", np.inf), (" NEVER ", np.inf),
                                            ("inf", np.inf), ("0", 0.0), ("2.5", 2.5)])
def test_native_after_values(monkeypatch, value, seconds):
    monkeypatch.setenv("PYPTO_NATIVE_AFTER", value)
    assert settings.read("PYPTO_NATIVE_AFTER") == seconds


@pytest.mark.parametrize("name", ["PYPTO_LAUNCH_BLOCKING", "PYPTO_RACE_CHECK"])
def test_flags_read_at_every_launch_raise_there(monkeypatch, ones, name):
    monkeypatch.setenv(name, "of")
    with _refused(name, "of", "1, true, yes or on / 0, false, no or off"):
        pto.launch(double, grid=1, block=64, args=(ones, 64))
    monkeypatch.setenv(name, "OFF")
    pto.launch(double, grid=1, block=64, args=(ones, 64))
    pto.sync()
    assert ones.numpy().tolist() == [2.0] * 64


def test_launch_blocking_raises_at_memcpy_and_race_check_at_compile(monkeypatch, ones):
    monkeypatch.setenv("PYPTO_LAUNCH_BLOCKING", "maybe")
    pending = ones.device.default_stream.pending
    with _refused("PYPTO_LAUNCH_BLOCKING", "maybe", "1, true"):
        pto.memcpy_h2d(ones, np.zeros(64, np.float32))
    assert ones.device.default_stream.pending == pending  # nothing was enqueued
    monkeypatch.delenv("PYPTO_LAUNCH_BLOCKING")
    monkeypatch.setenv("PYPTO_RACE_CHECK", "yess")
    with _refused("PYPTO_RACE_CHECK", "yess", "1, true"):
        pto.compile(double, args=(ones, 64), block=64)


def test_validate_flag_words_and_a_bad_pipeline(monkeypatch, ones):
    monkeypatch.setenv("PYPTO_VALIDATE", "no-such-pass")
    with _refused("PYPTO_VALIDATE", "no-such-pass", "1, true") as info:
        pto.compile(double, args=(ones, 64), block=64)
    assert "as a pipeline: unknown pass 'no-such-pass'" in str(info.value)
    monkeypatch.setenv("PYPTO_VALIDATE", "canonicalize")  # a pipeline it takes
    assert pto.compile(double, args=(ones, 64), block=64).pipeline.startswith("canonicalize,")


def test_max_trips(monkeypatch):
    from pypto.backend.interpreter import watchdog

    for bad in ("many", "0", "1.5"):
        monkeypatch.setenv("PYPTO_MAX_TRIPS", bad)
        with _refused("PYPTO_MAX_TRIPS", bad, "a positive whole number"):
            watchdog.max_trips()
    monkeypatch.setenv("PYPTO_MAX_TRIPS", " 1_000 ")
    assert watchdog.max_trips() == 1000


def test_fast_paths_is_read_at_import_and_raises_at_compile(monkeypatch, ones):
    from pypto.backend.interpreter import fastpaths

    monkeypatch.setenv("PYPTO_FAST_PATHS", "fast")
    switch = fastpaths._FastPaths()  # what `import pypto` made: no error yet, the default
    assert switch.on is True and switch.error is not None
    monkeypatch.setattr(fastpaths, "FAST_PATHS", switch)
    monkeypatch.setattr("pypto.backend.interpreter.executor.FAST_PATHS", switch)
    with _refused("PYPTO_FAST_PATHS", "fast", "1, true"):
        pto.compile(double, args=(ones, 32), block=32)  # (a new specialisation)
    monkeypatch.setenv("PYPTO_FAST_PATHS", "0")
    assert fastpaths._FastPaths().on is False


def test_cache_directories_must_not_be_files(monkeypatch, tmp_path):
    from pypto.backend.native.jit import cache_dir
    from pypto.tuning.cache import default_cache_dir

    a_file = tmp_path / "file"
    a_file.write_text("")
    for name, reader in (("PYPTO_NATIVE_CACHE", cache_dir),
                         ("PYPTO_CACHE_DIR", default_cache_dir)):
        monkeypatch.setenv(name, str(a_file))
        with _refused(name, str(a_file), "a directory (made if missing), not a file"):
            reader()
        monkeypatch.setenv(name, str(tmp_path / "new"))  # a directory to make: fine
        assert str(reader()).startswith(str(tmp_path / "new"))


def test_validate_log_and_debug_history_must_be_files_in_a_directory(monkeypatch, tmp_path,
                                                                       ones):
    from pypto.debug.repl import DebuggerShell

    monkeypatch.setenv("PYPTO_DEBUG_HISTORY", str(tmp_path))  # a directory
    with _refused("PYPTO_DEBUG_HISTORY", str(tmp_path), "a file in an existing directory"):
        DebuggerShell(None).start_history()  # type: ignore[arg-type]
    missing = str(tmp_path / "no" / "log")
    monkeypatch.setenv("PYPTO_VALIDATE_LOG", missing)
    with _refused("PYPTO_VALIDATE_LOG", missing, "a file in an existing directory"):
        pto.compile(double, args=(ones, 16), block=16, pipeline="cse", validate=True)
    monkeypatch.setenv("PYPTO_VALIDATE_LOG", str(tmp_path / "log"))
    pto.compile(double, args=(ones, 8), block=8, pipeline="cse", validate=True)
    assert (tmp_path / "log").read_text().startswith("checked double")


def test_full_traceback_keeps_the_error_being_raised_as_context(monkeypatch, ones):
    monkeypatch.setenv("PYPTO_FULL_TRACEBACK", "all")
    with _refused("PYPTO_FULL_TRACEBACK", "all", "1, true") as info:
        pto.launch(double, grid=1, block=64, args=(ones,))  # one argument missing
    assert isinstance(info.value.__context__, LaunchError)


def test_pypto_opt_prints_one_error_line(monkeypatch, capsys, tmp_path):
    from pypto.tools.opt import main

    source = tmp_path / "empty.mlir"
    source.write_text("builtin.module {}\n")
    for name, value in (("PYPTO_BACKEND", "nativ"), ("PYPTO_VALIDATE", "bad-pass")):
        monkeypatch.setenv(name, value)
        assert main([str(source)]) == 1
        out, err = capsys.readouterr()
        assert err.startswith(f"<environment>: error: environment setting {name}={value!r} ")
        assert err.count("\n") == 1 and "Traceback" not in err and out == ""
        monkeypatch.delenv(name)


def test_the_debugger_command_prints_one_error_line(monkeypatch, capsys):
    from pypto.debug.__main__ import main

    monkeypatch.setenv("PYPTO_NATIVE_AFTER", "later")
    assert main(["nowhere.py:kernel"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("pypto.debug: error: environment setting PYPTO_NATIVE_AFTER='later' ")
    assert "Traceback" not in err

"""CLI smoke tests and bad input: one clear line, exit status 2, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def dlcfuzz(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dlcfuzz.cli", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=timeout)


def assert_usage_error(p: subprocess.CompletedProcess, fragment: str) -> None:
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert fragment in lines[0], lines[0]


def test_ops_table_and_json():
    p = dlcfuzz("ops", "--json")
    assert p.returncode == 0
    rows = json.loads(p.stdout)
    assert len(rows) >= 70
    assert {"name", "family", "dtypes"} <= set(rows[0])


def test_gen_writes_json_and_onnx(tmp_path):
    p = dlcfuzz("gen", "--count", "3", "--ops", "5", "--seed", "1", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert len(list(tmp_path.glob("*.json"))) == 3 and len(list(tmp_path.glob("*.onnx"))) == 3


def test_unknown_compiler(tmp_path):
    assert_usage_error(dlcfuzz("fuzz", "--compiler", "nosuch", "--out", str(tmp_path / "r")), "unknown compiler")


def test_malformed_time(tmp_path):
    assert_usage_error(dlcfuzz("fuzz", "--time", "ten minutes", "--out", str(tmp_path / "r")), "malformed duration")


def test_unreadable_and_corrupt_store(tmp_path):
    assert_usage_error(dlcfuzz("list", str(tmp_path / "missing")), "no campaign store")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "store.sqlite").write_bytes(b"this is not a database" * 100)
    assert_usage_error(dlcfuzz("list", str(tmp_path / "bad")), "store")
    assert_usage_error(dlcfuzz("fuzz", "--resume", str(tmp_path / "bad")), "store")


def test_corrupt_program_file(tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text('{"format": "dlcfuzz-graph/1", "nodes": 3}')
    assert_usage_error(dlcfuzz("replay", str(bad)), "malformed graph")
    bad.write_text("{{{")
    assert_usage_error(dlcfuzz("replay", str(bad)), "not valid JSON")


def test_compiler_not_installed(tmp_path):
    # A fresh interpreter where importing onnxruntime fails, as on a machine without it.
    code = ("import sys; sys.modules['onnxruntime'] = None; from dlcfuzz.cli import main; "
            f"sys.exit(main(['fuzz', '--compiler', 'onnxruntime', '--out', {str(tmp_path / 'r')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert_usage_error(p, "not installed")


def test_ops_table_in_readme_is_fresh():
    for compiler in ("tvm", "torch", "jax"):  # the table says which targets lower each operator
        pytest.importorskip(compiler)
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "ops_table.py"), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout


@pytest.mark.parametrize("bad", ["--jobs=0", "--ops=0", "--max-tests=0", "--max-tests=-5"])
def test_bad_numbers(tmp_path, bad):
    assert_usage_error(dlcfuzz("fuzz", bad, "--out", str(tmp_path / "r")), "must be at least 1")


def test_splice_where_the_program_language_has_nothing_to_splice(tmp_path):
    pytest.importorskip("jax")
    p = dlcfuzz("fuzz", "--compiler", "xla", "--strategy", "programs", "--splice", "0.5", "--max-tests", "1",
                "--out", str(tmp_path / "r"))
    assert_usage_error(p, "nothing to splice")

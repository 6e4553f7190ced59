"""The metamorphic strategy end to end: planted faults in the mutant's extra operators are found,
reduced by delta debugging over the mutation steps and written with a reproducer; a correct
compiler stays quiet."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dlcfuzz.campaign.loop import Campaign, CampaignOptions

pytest.importorskip("onnxruntime")


def campaign(tmp_path: Path, compiler: str, tests: int, model: str = "tiny_resnet") -> Path:
    out = tmp_path / "run"
    Campaign(CampaignOptions(compiler=compiler, strategy="metamorphic", model=model, seconds=600, jobs=2,
                             out=out, max_tests=tests, quiet=True)).run()
    return out


def findings(out: Path) -> list[dict]:
    db = sqlite3.connect(out / "store.sqlite")
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute("SELECT * FROM findings ORDER BY id")]


@pytest.mark.parametrize("fault,category", [("wrong", "metamorphic"), ("raise", "mutant-rejected")])
def test_planted_fault_in_mutant_is_found_and_steps_reduced(tmp_path, fault, category):
    # "abs" is in every mutation step and in none of the seed models: only mutants hit the fault
    out = campaign(tmp_path, f"planted:{fault}@abs", tests=4)
    fs = findings(out)
    assert fs and {f["category"] for f in fs} == {category}
    assert all(json.loads(f["configs"]) == ["ort-all"] for f in fs)
    first = next(f for f in fs if f["duplicate_of"] is None)
    folder = next((out / "findings").glob(f"{first['id']:04d}-*"))
    detail = (folder / "detail.txt").read_text()
    kept = json.loads(detail.split("mutation step(s): ")[1].splitlines()[0])
    assert 1 <= len(kept) <= 3, kept  # one step suffices (plus what it depends on), out of 10+
    assert (folder / "seed.onnx").exists() and (folder / "mutant.onnx").exists()
    # the standalone script runs the real onnxruntime, which has no planted fault
    p = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "not reproduced" in p.stdout, p.stdout + p.stderr


def test_correct_compiler_is_quiet_on_mutants(tmp_path):
    out = campaign(tmp_path, "onnxruntime", tests=8, model="tiny_mobilenet")
    assert findings(out) == []
    db = sqlite3.connect(out / "store.sqlite")
    assert db.execute("SELECT COUNT(*) FROM tests WHERE verdict = 'pass'").fetchone()[0] == 8

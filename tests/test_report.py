"""`dlcfuzz list`, `report` and `issue` on a real campaign (ONNXRuntime with a planted mis-evaluated Abs),
and the report opened in a real browser (headless Chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dlcfuzz.backends.torch_compile import PYTORCH_FUZZER_CHECKS
from dlcfuzz.cli import main
from dlcfuzz.engine.issue import issue_for

pytest.importorskip("onnxruntime")

# what must never reach a finding's folder, the report or an issue
INTERNAL_FRAME = re.compile(r'File "[^"]*dlcfuzz/')


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """12 tests (seed 1 finds its 3 distinct findings at tests 1, 6 and 9; 40 tests found the same 3 and 48
    duplicates, each reduced, 2x the CPU). Its stats are saved at the end and every 5 s: the findings and coverage
    charts start at 0, so even one saved point draws them."""
    out = tmp_path_factory.mktemp("campaign") / "run"
    code = main(["fuzz", "--compiler", "planted:miseval@abs", "--strategy", "hirgen", "--only-ops", "abs,add,relu",
                 "--max-tests", "12", "--time", "600s", "--jobs", "1", "--seed", "1", "--out", str(out), "--quiet"])
    assert code == 0
    assert list((out / "findings").iterdir()), "the planted fault was not found"
    return out


def _no_machine_text(text: str, run: Path) -> None:
    assert str(run) not in text and str(Path.home()) + "/" not in text
    assert str(Path(__file__).resolve().parent.parent) not in text  # the checkout
    assert not INTERNAL_FRAME.search(text)


@pytest.mark.slow
def test_finding_folder_has_no_machine_paths_or_internal_frames(run):
    for f in (run / "findings").glob("*/*"):
        if f.suffix in (".py", ".txt"):
            _no_machine_text(f.read_text(), run)


def test_list_shows_clusters_and_known_bugs(run, tmp_path, capsys):
    assert main(["list", str(run)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^cluster 1: inconsistency in planted:miseval@abs .*abs.*\[new\]$", out, re.M)
    assert re.search(r"^  #\d+ +inconsistency", out, re.M)
    assert re.search(r"distinct findings in \d+ clusters: [1-9]\d* new, 0 known$", out, re.M)
    known = tmp_path / "known.json"
    known.write_text(json.dumps({"compiler": "planted", "bugs": [
        {"id": "planted-abs", "text": "the planted Abs", "tracker": "TRACK-1", "match": {"ops_any": ["abs"]}}]}))
    assert main(["list", str(run), "--known", str(known)]) == 0
    out = capsys.readouterr().out
    assert "[known: TRACK-1]" in out and re.search(r"clusters: 0 new, [1-9]\d* known$", out, re.M)
    assert main(["list", str(run), "--known", str(tmp_path / "absent.json")]) == 2


def test_issue_is_complete_and_its_reproducer_reproduces(run, capsys):
    assert main(["issue", str(run), "1", "--run-repro"]) == 0
    md = capsys.readouterr().out
    for section in ("# [onnxruntime", "## Describe the bug", "## Versions and environment", "## To reproduce",
                    "## Expected behavior", "## Actual behavior", "## Minimal configuration difference"):
        assert section in md
    assert "```python\n" in md and "BUG REPRODUCED" in md and "(exit status 1)" in md
    assert "| python |" in md and "| onnxruntime |" in md
    assert "Shows it: `ort-all`" in md and "Does not show it: `ort-disable`" in md
    _no_machine_text(md, run)
    from dlcfuzz.engine.store import Store

    n = len(Store(run / "store.sqlite", create=False).findings(distinct_only=False))
    assert main(["issue", str(run), str(n + 1)]) == 2  # no such finding


def test_issue_for_pytorch_has_the_fuzzer_template_fields(tmp_path):
    folder = tmp_path / "findings" / "0001-wrong-result"
    folder.mkdir(parents=True)
    (folder / "repro.py").write_text("import torch\nprint('BUG REPRODUCED')\n")
    row = {"id": 1, "compiler": "inductor", "version": "torch 2.x", "category": "wrong-result",
           "key": "wrong|inductor|inductor-default|value|ops=abs", "configs": '["inductor-default"]',
           "detail": "inductor-default differ from the reference at output 0", "signature": "abc", "nodes": 3,
           "reduced_nodes": 1}
    md = issue_for(tmp_path, row).markdown
    assert "## torch.compile fuzzer checklist" in md and "topic: fuzzer" in md
    assert all(f"- [ ] {c}" in md for c in PYTORCH_FUZZER_CHECKS)
    assert "### Versions" in md and "collect_env" in md and "### Error logs" in md
    row = {**row, "category": "unexpected-error", "key": "error|inductor"}  # wording: no ONNX for a torch program
    md = issue_for(tmp_path, row).markdown
    assert "found an **unexpected-error** finding" in md and "ONNX" not in md and "runs it eagerly" in md


def test_report_has_charts_counts_and_clusters(run):
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    _no_machine_text(page, run)
    assert page.count("<svg class=\"chart\"") >= 2
    assert "elapsed time (s)" in page and "tests per second" in page and "coverage items" in page
    assert "<h2>Operators and dtypes</h2>" in page and "<h2>Root-cause clusters</h2>" in page
    assert re.search(r"cluster 1: inconsistency", page)
    assert "<details class='repro'>" in page and "<details class='issue'>" in page


CHECK_SCRIPT = """
<script>
const r = {};
r.charts = document.querySelectorAll('svg.chart').length;
r.drawn = [...document.querySelectorAll('svg.chart polyline.series')].filter(p => p.getBBox().width > 10).length;
r.axisLabels = [...document.querySelectorAll('svg.chart text')].map(t => t.textContent)
  .filter(t => t.includes('(s)') || t.includes('per second')).length;
const d = document.querySelector('details.repro');
const pre = d.querySelector('pre');
r.closedVisible = pre.checkVisibility();
r.closedHeight = d.getBoundingClientRect().height;
d.querySelector('summary').click();
r.open = d.open;
r.openVisible = pre.checkVisibility();
r.openHeight = d.getBoundingClientRect().height;
r.reproText = pre.textContent.includes('BUG REPRODUCED');
const out = document.createElement('pre');
out.id = 'dlcfuzz-check';
out.textContent = JSON.stringify(r);
document.body.appendChild(out);
</script>
"""


def test_report_renders_in_headless_chromium(run, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium (Debian: apt-get install chromium)")
    assert main(["report", str(run)]) == 0
    page = tmp_path / "report.html"  # the report plus a script that measures it after layout
    page.write_text((run / "report.html").read_text() + CHECK_SCRIPT)
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--run-all-compositor-stages-before-draw",
                        "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="dlcfuzz-check">(.*?)</pre>', p.stdout)
    assert m, p.stderr[-2000:]
    r = json.loads(m.group(1).replace("&quot;", '"'))
    assert r["charts"] >= 2 and r["drawn"] >= 2 and r["axisLabels"] >= 2
    assert r["closedVisible"] is False and r["closedHeight"] < 40  # the summary line only
    assert r["open"] is True and r["openVisible"] is True and r["openHeight"] > r["closedHeight"] + 100
    assert r["reproText"]


def test_cli_entry_point_prints_an_issue(run):
    p = subprocess.run([sys.executable, "-m", "dlcfuzz.cli", "issue", str(run), "1"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("# [")

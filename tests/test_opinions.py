"""The second opinion on numeric findings: independent evaluators of the reduced graph confirm our reference
against a planted wrong compiler, and flag a planted wrong reference (a real, correct compiler) as a suspected
reference error, in the store, detail.txt, the issue text and `dlcfuzz list`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import wrong_reference_plugin  # noqa: E402  (registers the compiler `wrong-reference`)
from dlcfuzz.engine.campaign import Campaign, campaign_options  # noqa: E402
from dlcfuzz.engine.issue import issue_for  # noqa: E402
from dlcfuzz.engine.store import Store  # noqa: E402
from dlcfuzz.ir.graph import Graph, Node, Value  # noqa: E402
from dlcfuzz.ir.types import TensorType  # noqa: E402
from dlcfuzz.ops import get_op  # noqa: E402
from dlcfuzz.oracle.opinions import (  # noqa: E402
    AGREES_COMPILER,
    AGREES_NEITHER,
    AGREES_REFERENCE,
    CONFIRMED,
    NO_OPINION,
    ONNX_REFERENCE,
    SUSPECTED,
    SecondOpinion,
    classify,
)


def run(tmp_path: Path, compiler: str, op: str, tests: int) -> tuple[Path, list[dict]]:
    out = tmp_path / "run"
    Campaign(campaign_options(compiler=compiler, strategy="random", seconds=600, jobs=1, seed=0, out=out, ops=2,
                              only_ops=[op], max_tests=tests, quiet=True)).run()
    store = Store(out / "store.sqlite", create=False)
    rows = [r for r in store.findings(distinct_only=True) if r["category"] in ("wrong-result", "inconsistency")]
    store.close()
    return out, rows


def folder_of(out: Path, row: dict) -> Path:
    return out / "findings" / f"{row['id']:04d}-{row['category']}"


def test_a_planted_wrong_compiler_is_confirmed_by_the_independent_evaluators(tmp_path):
    out, rows = run(tmp_path, "planted:wrong@add", "add", tests=4)
    assert rows, "the planted wrong result was not found"
    for row in rows:
        opinion = SecondOpinion.from_json(row["opinions"])
        assert opinion is not None and opinion.config == "ort-all"
        said = {o.evaluator: o for o in opinion.opinions}
        assert said[ONNX_REFERENCE.name].verdict == AGREES_REFERENCE
        ort = said["onnxruntime (ORT_DISABLE_ALL)"]  # ONNXRuntime's own unoptimized configuration: read, not re-run
        assert ort.verdict == AGREES_REFERENCE and "ort-disable" in ort.reason and "not run again" in ort.reason
        assert opinion.summary == CONFIRMED
        assert "independent evaluators agree with the reference" in (folder_of(out, row) / "detail.txt").read_text()
        issue = issue_for(out, row)
        assert "## Second opinion" in issue.markdown and "SUSPECTED" not in issue.title


def test_a_planted_reference_error_is_a_suspected_reference_error(tmp_path, monkeypatch, capsys):
    spec = get_op(wrong_reference_plugin.WRONG_OP)
    monkeypatch.setattr(spec, "ref", spec.ref)  # building the compiler breaks this process's reference: restored
    from dlcfuzz.cli import main

    out = tmp_path / "run"
    assert main(["--plugin", "wrong_reference_plugin", "fuzz", "--compiler", "wrong-reference", "--strategy", "random",
                 "--only-ops", wrong_reference_plugin.WRONG_OP, "--ops", "2", "--max-tests", "3", "--jobs", "1",
                 "--seed", "0", "--time", "600s", "--out", str(out), "--quiet"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-2:]  # counted apart, above the internal errors line
    store = Store(out / "store.sqlite", create=False)
    rows = store.findings(distinct_only=True)
    store.close()
    assert rows, "the planted reference error gave no finding"
    assert last[0].startswith(f"suspected reference errors: {len(rows)} ") and last[1] == "internal errors: 0"
    for row in rows:
        opinion = SecondOpinion.from_json(row["opinions"])
        assert opinion is not None and opinion.summary == SUSPECTED, opinion
        assert {o.evaluator: o.verdict for o in opinion.opinions}[ONNX_REFERENCE.name] == AGREES_COMPILER
        assert "SUSPECTED REFERENCE ERROR" in (folder_of(out, row) / "detail.txt").read_text()
        issue = issue_for(out, row)
        assert issue.title.startswith("[SUSPECTED REFERENCE ERROR: DO NOT FILE UPSTREAM]")
        assert "dlcfuzz's bug until shown otherwise" in issue.markdown
    assert main(["list", str(out)]) == 0
    listed = capsys.readouterr().out
    assert "SUSPECTED REFERENCE ERROR" in listed and f"{len(rows)} {SUSPECTED}(s)" in listed


def test_classify_says_which_side_an_evaluator_takes():
    ref, compiler = [np.array([1.0, 2.0], np.float32)], [np.array([1.0, 3.0], np.float32)]
    assert classify("e", [np.array([1.0, 2.0], np.float64)], ref, compiler).verdict == AGREES_REFERENCE
    assert classify("e", [np.array([1.0, 3.0], np.float32)], ref, compiler).verdict == AGREES_COMPILER
    assert classify("e", [np.array([5.0, 5.0], np.float32)], ref, compiler).verdict == AGREES_NEITHER
    assert classify("e", ref, ref, ref).verdict == NO_OPINION


def test_a_graph_onnx_reference_cannot_evaluate_is_no_opinion_with_the_reason():
    """A failure of an evaluator is "no opinion", with what it raised (the worker reports it)."""
    from dlcfuzz.exec.opinions import make_handler, opinion_request
    from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes

    t = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", t)], nodes=[Node("relu", ["x"], [Value("y", t)])], outputs=["y"])
    tc = TestCase(g, {"x": np.ones((2, 3), np.float32)}, [], compiler="onnxruntime")
    handle = make_handler({"compiler": "onnxruntime"})
    obs = reply_from_bytes(handle(opinion_request(tc, "ort-all", [ONNX_REFERENCE.name])))[0]
    assert [(o.config, o.status) for o in obs] == [(ONNX_REFERENCE.name, "ok")]
    tc.inputs = {}  # the evaluator raises (a missing input): no opinion, with the reason
    obs = reply_from_bytes(handle(opinion_request(tc, "ort-all", [ONNX_REFERENCE.name])))[0]
    assert obs[0].status == "error" and "KeyError" in obs[0].error


def direct_second_opinion(tmp_path: Path, compiler: str, g: Graph, inputs: dict[str, np.ndarray]) -> SecondOpinion:
    """The second opinion on a wrong result of `g` by `compiler`'s default pair, called directly (no campaign, no
    capability probe), with a reducer pool of its own."""
    from dlcfuzz.backends import get_backend, plugin_modules
    from dlcfuzz.exec.pool import WorkerPool
    from dlcfuzz.oracle.testcase import TestCase
    from dlcfuzz.oracle.verdict import Verdict
    from dlcfuzz.strategies import Context
    from dlcfuzz.strategies.opinions import second_opinion

    backend = get_backend(compiler)
    configs = list(backend.default_pair())
    tc = TestCase(g, inputs, configs, seed=1, compiler=compiler)
    v = Verdict("bug", "wrong-result", configs=[c.name for c in configs])
    with WorkerPool("dlcfuzz.exec.worker:make_handler", {"compiler": compiler, "plugins": plugin_modules()},
                    jobs=1, timeout_s=120) as pool:
        ctx = Context(compiler=compiler, seed=0, params={}, configs=configs, configs_picked=False, backend=backend,
                      version=backend.version(), store=None, coverage=None, out=tmp_path, reduce=True, seconds=60,
                      max_tests=1, reducer_pool=lambda: pool)
        opinion = second_opinion(ctx, tc, v, g, inputs, configs)
    assert opinion is not None and opinion.config in v.configs, opinion
    return opinion


def test_a_reference_error_on_another_compiler_is_judged_by_every_evaluator(monkeypatch, tmp_path):
    """XLA: onnx.reference, unoptimized ONNXRuntime (run in the second-opinion worker) and eager JAX all side
    with the compiler against a planted wrong reference (called directly: no campaign, no capability probe)."""
    pytest.importorskip("jax")
    spec = get_op(wrong_reference_plugin.WRONG_OP)
    monkeypatch.setattr(spec, "ref", spec.ref)
    t = TensorType("float32", (2, 3))
    g = Graph(inputs=[Value("x", t)], nodes=[Node(wrong_reference_plugin.WRONG_OP, ["x"], [Value("y", t)])],
              outputs=["y"])
    inputs = {"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)}
    opinion = direct_second_opinion(tmp_path, "wrong-reference-xla", g, inputs)
    said = {o.evaluator: o.verdict for o in opinion.opinions}
    assert said == {ONNX_REFERENCE.name: AGREES_COMPILER, "onnxruntime (ORT_DISABLE_ALL)": AGREES_COMPILER,
                    "jax eager (jax.disable_jit)": AGREES_COMPILER}, opinion.text()
    assert opinion.suspected_reference_error


def test_an_unoptimized_onnxruntime_that_departs_too_gives_no_opinion(tmp_path):
    """A kernel bug both ONNXRuntime builds share (the registered Col2Im N-d dilation bug): its unoptimized build
    departs from the reference too, so it is part of the finding, not an independent opinion. It had sided with
    the optimized build, and a default campaign's Col2Im finding inside a Scan, which onnx.reference cannot run,
    became a suspected reference error."""
    g = Graph(inputs=[Value("x", TensorType("float32", (3, 6, 7)))],
              nodes=[Node("col2im", ["x"], [Value("y", TensorType("float32", (3, 1, 2, 5, 7)))],
                          {"block_shape": [2, 3, 1], "dilations": [1, 2, 1], "image_shape": [2, 5, 7],
                           "pads": [0] * 6, "strides": [1, 1, 1]})], outputs=["y"])
    inputs = {"x": np.linspace(-2, 2, 126, dtype=np.float32).reshape(3, 6, 7)}
    opinion = direct_second_opinion(tmp_path, "onnxruntime", g, inputs)
    assert opinion.config == "ort-all", opinion
    said = {o.evaluator: o for o in opinion.opinions}
    assert said["onnxruntime (ORT_DISABLE_ALL)"].verdict == NO_OPINION, opinion.text()
    assert "departs from the reference too" in said["onnxruntime (ORT_DISABLE_ALL)"].reason
    assert said[ONNX_REFERENCE.name].verdict == AGREES_REFERENCE and opinion.summary == CONFIRMED, opinion.text()


def test_a_store_without_the_opinions_column_still_opens(tmp_path):
    """A store of an older dlcfuzz (no `opinions` column) gains it when opened; its findings have no opinion."""
    import sqlite3

    path = tmp_path / "store.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE findings (id INTEGER PRIMARY KEY, test_id INTEGER, category TEXT, signature TEXT, key TEXT,"
               " compiler TEXT, version TEXT, configs TEXT, detail TEXT, created REAL, duplicate_of INTEGER,"
               " reduced BLOB, reproducer TEXT, nodes INTEGER, reduced_nodes INTEGER)")
    db.execute("INSERT INTO findings (id, category, signature, key) VALUES (1, 'wrong-result', 'abc', 'wrong|x')")
    db.commit()
    db.close()
    store = Store(path, create=False)
    row = store.finding(1)
    store.close()
    assert "opinions" in row and row["opinions"] is None and SecondOpinion.from_json(row["opinions"]) is None

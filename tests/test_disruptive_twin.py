"""Disruptive verdicts check a rejection against the broken node: the test's legal twin (the same graph with the
rule kept) must be accepted; a configuration that rejects the twin too has an unexpected error on a valid graph,
not the expected rejection (issue: two disruptive TVM tests raised an importer error on a valid node)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.engine.campaign import Campaign, campaign_options
from dlcfuzz.gen.coverage import Coverage
from dlcfuzz.gen.disruptive import generate_disruptive, legal_twin
from dlcfuzz.ops import all_ops, check_graph, get_op
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.testcase import TestCase

pytest.importorskip("onnxruntime")

CHOICES = [(s, list(s.dtypes)) for s in all_ops() if s.name in ("add", "relu", "matmul", "concat", "transpose",
                                                               "reduce_sum", "softmax", "where", "gather")]


def test_the_legal_twin_keeps_the_broken_rule_and_the_rest_of_the_graph():
    made = 0
    for seed in range(40):
        g, inputs, broken = generate_disruptive(np.random.default_rng(seed), Coverage(), CHOICES)
        twin, twin_inputs = legal_twin(g, inputs, broken.to_json(), seed)  # check_graph passes inside
        check_graph(twin)
        node = next(n for n in twin.nodes if n.name == broken.node)
        types = twin.types()
        assert [(types[i].dtype, list(types[i].shape)) for i in node.inputs] == [tuple(t) for t in broken.legal]
        assert [n.name for n in twin.nodes] == [n.name for n in g.nodes] and twin.outputs == g.outputs
        assert set(twin_inputs) == {v.name for v in twin.inputs} <= set(inputs)
        assert get_op(node.op).infer([types[i] for i in node.inputs], node.attrs)  # valid, typed by the spec
        made += 1
    assert made == 40


def campaign(tmp_path: Path, compiler: str, tests: int) -> Path:
    out = tmp_path / "run"
    opts = campaign_options(compiler=compiler, seconds=600, jobs=1, seed=3, out=out, ops=4, max_tests=tests,
                            quiet=True, keep_tests=True, strategy="hirgen", mode="disruptive",
                            only_ops=["relu", "add", "matmul", "transpose", "concat", "softmax"])
    Campaign(opts).run()
    return out


def twin_findings(out: Path) -> list[str]:
    db = sqlite3.connect(out / "store.sqlite")
    rows = db.execute("SELECT detail FROM findings WHERE category = ?", (C.UNEXPECTED_ERROR,)).fetchall()
    return [d for (d,) in rows if "legal twin" in d]


def twins_run(out: Path) -> int:
    db = sqlite3.connect(out / "store.sqlite")
    return sum(TestCase.from_bytes(b).meta.get("twin", False) for (b,) in db.execute("SELECT blob FROM tests"))


def test_a_compiler_that_fails_on_the_valid_node_is_found_and_the_correct_one_is_not(tmp_path):
    """planted:raise@relu makes ORT's optimized configuration raise on any graph holding a Relu, broken or not:
    its rejections of tests whose Relu is valid were taken as the expected rejection; the twin shows them.
    ONNXRuntime itself accepts every twin of the same campaign."""
    planted = campaign(tmp_path / "planted", "planted:raise@relu", 24)
    found = twin_findings(planted)
    assert found and all("planted internal error" in d and "ort-all" in d for d in found), found
    correct = campaign(tmp_path / "correct", "onnxruntime", 24)
    assert twins_run(correct) >= 8  # new (operator, rule, dtype) triples all get one
    assert twin_findings(correct) == []


def test_edge_values_of_a_disruptive_test_never_raise():
    """Edge values are drawn inside the valid nodes' domains; the broken node's domain rule may not apply to its
    broken types (a quantization operator fed float where its domain reads an integer range raised, an
    internal error of the default 60 s campaign)."""
    from dlcfuzz.gen.random import allowed_choices
    from dlcfuzz.strategies.hirgen import DisruptiveHirgen

    choices = allowed_choices(None, None, lambda op, dt: True)
    drawn = 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        g, inputs, broken = generate_disruptive(rng, Coverage(), choices)
        drawn += DisruptiveHirgen.edge_values(g, inputs, broken.node, rng).drawn
    assert drawn >= 40


def test_onnxruntime_accepts_the_legal_twins_of_disruptive_tests_with_edge_values():
    """A twin samples again every input made for the broken node alone: its values were drawn for the broken
    form (edge profiles included), and a NegativeLogLikelihoodLoss twin kept class indices 32767 and -257, which
    ORT rightly refused (a false unexpected-error of the default 60 s campaign)."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.gen.random import allowed_choices
    from dlcfuzz.strategies.hirgen import DisruptiveHirgen

    ort = get_backend("onnxruntime")
    config = ort.configs()["ort-disable"]
    nll = [(s, ["float32"]) for s in all_ops() if s.name == "negative_log_likelihood_loss"]
    choices = allowed_choices(None, None, lambda op, dt: True)
    ran = 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        g, inputs, broken = generate_disruptive(rng, Coverage(), nll if seed % 2 else choices)
        DisruptiveHirgen.edge_values(g, inputs, broken.node, rng)
        twin, twin_inputs = legal_twin(g, inputs, broken.to_json(), seed)
        (o,) = run_configs(ort, TestCase(twin, twin_inputs, [config], compiler="onnxruntime"))
        assert o.status == "ok" or ort.expected_error(o.error or ""), (seed, o.error)
        ran += o.status == "ok"
    assert ran >= 60


def test_every_disruptive_test_is_made_where_one_prefix_admits_no_break(tmp_path):
    """OpenVINO binds few disruptive rules, so a valid prefix may offer no operator a breakable input: test 20 of
    seed 0 raised "could not break a rule" (an internal error of the campaign) before a new prefix was drawn."""
    from dlcfuzz.exec.cluster import make_pool
    from dlcfuzz.oracle.policy import test_seed

    campaign = Campaign(campaign_options(compiler="openvino", strategy="hirgen", mode="disruptive", seconds=1,
                                         jobs=1, seed=0, out=tmp_path / "c", quiet=True))
    campaign.store.close()  # only its strategy is used, started as a campaign starts it (its probe narrows choices)
    strategy = campaign.strategy
    with make_pool(None, strategy.handler, strategy.handler_init(), jobs=1, timeout_s=60, memory_mb=4096) as pool:
        strategy.start(pool, False)
        made = [strategy.make_test(seq, test_seed(0, seq)) for seq in range(25)]
    assert len(made) == 25

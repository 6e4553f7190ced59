"""Root-cause clusters, the known-bugs register and text scrubbing.

The clustering is measured against `tests/data/labelled_findings.json`: findings of real campaigns
labelled with their root cause by hand (see its "about")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dlcfuzz.engine.clusters import FindingFacts, cluster, facts_of, message_class, pairwise_scores
from dlcfuzz.engine.known import NOT_FILED, Register, readme_section
from dlcfuzz.engine.scrub import scrub
from dlcfuzz.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "data" / "labelled_findings.json"


def labelled_facts() -> tuple[list[FindingFacts], dict[int, str]]:
    data = json.loads(LABELLED.read_text())["findings"]
    facts, labels = [], {}
    for d in data:
        row = {"id": d["id"], "compiler": d["compiler"], "category": d["category"], "key": d["key"],
               "configs": json.dumps(d["configs"]), "detail": d["detail"]}
        graph = None if d["reduced_ops"] is None else (frozenset(d["reduced_ops"]), frozenset(d["reduced_dtypes"]))
        facts.append(facts_of(row, graph=graph))
        labels[d["id"]] = d["label"]
    return facts, labels


def test_clustering_precision_and_recall_against_labels():
    facts, labels = labelled_facts()
    assert len(facts) >= 20 and len(set(labels.values())) >= 6, "the labelled set is too small to measure"
    clusters = cluster(facts)
    assigned = {f.id: c.number for c in clusters for f in c.members}
    precision, recall = pairwise_scores(assigned, labels)
    # the baseline: every distinct signature is its own finding (what `dlcfuzz list` showed before clusters)
    base_p, base_r = pairwise_scores({f.id: f.id for f in facts}, labels)
    print(f"\n{len(facts)} labelled findings, {len(set(labels.values()))} root causes, {len(clusters)} clusters: "
          f"pairwise precision {precision:.3f}, recall {recall:.3f} (one cluster per signature: recall {base_r:.3f})")
    assert precision >= 0.95
    assert recall >= 0.5 and recall > base_r + 0.3
    assert len(clusters) < len(facts)


def test_message_class_drops_names_numbers_and_shapes():
    a = ("Fail: [ONNXRuntimeError] : 1 : FAIL : Type Error: Type parameter (T) of Optype (LayerNormalization) bound "
         "to different types (tensor(float16) and tensor(float) in node (_Mul48/LayerNormFusion/).)")
    b = a.replace("float16", "double").replace("_Mul48", "_Mul24")
    assert message_class(a) == message_class(b)
    assert message_class("Check failed: lv12 == v3 at /home/x/y/tvm/src/relax/op.cc:120") == \
        message_class("Check failed: lv7 == v99 at /opt/build/tvm/src/relax/op.cc:77")
    assert message_class("In-place index 0 is out of range") != message_class("cannot make uint from negative value")


def _numeric(i: int, ops: set[str], dtypes: set[str], reason: str = "value", detail: str = "") -> FindingFacts:
    row = {"id": i, "compiler": "onnxruntime", "category": "inconsistency", "configs": '["ort-disable", "ort-all"]',
           "key": f"inconsistency|onnxruntime|ort-disable|ort-all|{reason}|ops={','.join(sorted(ops))}",
           "detail": detail}
    return facts_of(row, graph=(frozenset(ops), frozenset(dtypes)))


def test_unreduced_graph_joins_the_cluster_of_its_reduced_operators():
    small = _numeric(1, {"relu"}, {"float32"})
    big = _numeric(2, {"relu", "exp", "transpose"}, {"float32", "int64"})
    other = _numeric(3, {"lrn"}, {"float32"})
    half = _numeric(4, {"relu", "exp"}, {"float16"})  # another dtype class: not the same bug
    numbers = {f.id: c.number for c in cluster([small, big, other, half]) for f in c.members}
    assert numbers[1] == numbers[2] != numbers[3]
    assert numbers[4] != numbers[1]


def test_shape_mismatches_cluster_by_pattern_not_operator():
    a = _numeric(1, {"expand"}, {"float16"}, "shape", "ov-cpu differ from the reference at output 5: shape (1,) != ()")
    b = _numeric(2, {"bit_shift"}, {"uint8"}, "shape", "ov-cpu differ from the reference at output 3: shape (1,) != ()")
    c = _numeric(3, {"expand"}, {"float16"}, "shape", "at output 1: shape (2, 3) != (3, 2)")
    numbers = {f.id: c.number for c in cluster([a, b, c]) for f in c.members}
    assert numbers[1] == numbers[2] != numbers[3]


def test_wrong_results_cluster_whatever_configurations_the_test_sampled():
    def wrong(i: int, configs: list[str], opts: str = "none") -> FindingFacts:
        row = {"id": i, "compiler": "onnxruntime", "category": "wrong-result", "configs": json.dumps(configs),
               "key": f"wrong|onnxruntime|{','.join(configs)}|value|ops=reduce_l2|opts={opts}", "detail": ""}
        return facts_of(row, graph=(frozenset({"reduce_l2"}), frozenset({"int32"})))

    a = wrong(1, ["ort-disable", "ort-all"])
    b = wrong(2, ["ort-disable", "ort-all", "ort-transformers-gpt2"])
    c = wrong(3, ["ort-disable", "ort-all"], opts="ConstantFolding")  # needs an optimization: another bug
    numbers = {f.id: cl.number for cl in cluster([a, b, c]) for f in cl.members}
    assert numbers[1] == numbers[2] != numbers[3]


def test_register_marks_matching_findings_and_is_user_extendable(tmp_path, monkeypatch):
    reg = Register(use_env=False)
    assert len(reg.bugs) >= 10 and all(b.text for b in reg.bugs)
    fuse = {"id": 1, "compiler": "onnxruntime", "category": "unexpected-error", "configs": '["ort-basic"]',
            "key": "error|onnxruntime|RuntimeException|...", "detail":
            "RuntimeException: ... FuseReluClip::Apply Unexpected data type for Clip 'min' input of 7"}
    k = reg.match(facts_of(fuse, graph=(frozenset({"relu", "clip"}), frozenset({"int64"}))), fuse["detail"])
    assert k is not None and k.id == "ort-fuse-relu-clip-dtype" and k.tracker.startswith("https://github.com/")
    lrn = _numeric(2, {"lrn"}, {"float32"})
    lrn = FindingFacts(lrn.id, lrn.compiler, "wrong-result", ("ort-disable",), "", lrn.ops, lrn.dtypes, "",
                       "wrong|onnxruntime|ort-disable|value|ops=lrn", "value")
    assert reg.match(lrn).id == "ort-lrn-size1-cancellation" and reg.match(lrn).ref == NOT_FILED
    assert reg.match(_numeric(3, {"abs"}, {"float32"})) is None
    # regression (an onnxruntime 1.20.1 campaign): a wrong ReverseSequence whose unminimized
    # optimization set lists FuseReluClip is not that optimization's known error
    rev = {"id": 4, "compiler": "onnxruntime", "category": "wrong-result", "configs": '["ort-disable", "ort-all"]',
           "key": "wrong-result|onnxruntime|ort-all,ort-disable|opts=ConstantFolding,FuseReluClip,GeluFusionL1",
           "detail": "ort-disable, ort-all differ from the reference at output 4: distance 74.7 > 0"}
    assert reg.match(facts_of(rev, graph=(frozenset({"reverse_sequence"}), frozenset({"uint8"}))), rev["detail"]) is None
    # the user's file, by option and by environment variable
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"compiler": "onnxruntime", "bugs": [
        {"id": "my-abs", "text": "Abs is off", "tracker": "ISSUE-7", "match": {"ops_all": ["abs"]}}]}))
    assert Register(extra=[mine], use_env=False).match(_numeric(3, {"abs"}, {"float32"})).ref == "ISSUE-7"
    monkeypatch.setenv("DLCFUZZ_KNOWN_BUGS", str(mine))
    assert Register().match(_numeric(3, {"abs"}, {"float32"})).id == "my-abs"
    bad = tmp_path / "bad.json"
    bad.write_text('{"compiler": "x", "bugs": [{"id": "b", "text": "t", "match": {"opz": ["abs"]}}]}')
    with pytest.raises(UsageError, match="unknown match field"):
        Register(extra=[bad], use_env=False)


def test_clusters_the_register_attributes_to_one_known_bug_are_one_cluster():
    """One in-place write of ORT's training-mode BatchNormalization was seen through several consumers
    (`batch_norm,less`, `batch_norm,max`): four clusters by operators, one bug by the register. A new
    cluster and a cluster of another known bug stay apart."""
    from dlcfuzz.engine.report import merge_known

    def wrong(i: int, ops: set[str]) -> FindingFacts:
        row = {"id": i, "compiler": "onnxruntime", "category": "wrong-result", "configs": '["ort-disable", "ort-all"]',
               "key": f"wrong|onnxruntime|ort-disable,ort-all|value|ops={','.join(sorted(ops))}|opts=none", "detail": ""}
        return facts_of(row, graph=(frozenset(ops), frozenset({"float32"})))

    reg = Register(use_env=False)
    found = [wrong(1, {"batch_norm", "less"}), wrong(2, {"abs"}), wrong(3, {"batch_norm", "max"}),
             wrong(4, {"col2im"}), wrong(5, {"batch_norm", "sub"})]
    clusters = cluster(found)
    assert len(clusters) == 5
    known = {f.id: k for f in found if (k := reg.match(f)) is not None}
    assert {k.id for k in known.values()} == {"ort-batchnorm-training-overwrites-mean-input", "ort-col2im-nd-dilation"}
    merged = merge_known(clusters, known)
    assert [[f.id for f in c.members] for c in merged] == [[1, 3, 5], [2], [4]]
    assert [c.number for c in merged] == [1, 2, 3]


def test_readme_known_bugs_section_is_generated_and_fresh():
    section = readme_section(Register(use_env=False))
    assert "onnxruntime 1.32.0" in section and "apache-tvm 0.27.0.post1" in section
    assert "https://github.com/microsoft/onnxruntime/issues/11836" in section and NOT_FILED in section
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "known_bugs.py"), "--check"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_scrub_strips_dlcfuzz_frames_and_machine_paths():
    tb = ('Traceback (most recent call last):\n'
          '  File "/srv/checkout/src/dlcfuzz/exec/worker.py", line 47, in run_configs\n'
          '    compiled = backend.build(lowered[key], tc.graph, config)\n'
          '               ^^^^^^^^^^^^^^\n'
          '  File "/home/me/.venv/lib/python3.11/site-packages/onnxruntime/capi/session.py", line 9, in run\n'
          '    return self._sess.run()\n'
          'RuntimeError: bad model /tmp/run7/x.onnx, see https://github.com/microsoft/onnxruntime/issues/1\n')
    out = scrub(tb)
    assert "dlcfuzz" not in out.replace("of dlcfuzz left out", "")
    assert "/srv/checkout/" not in out and "/home/me" not in out and "/tmp/run7" not in out
    assert 'File "site-packages/onnxruntime/capi/session.py", line 9, in run' in out
    assert "https://github.com/microsoft/onnxruntime/issues/1" in out and ".../x.onnx" in out
    # a C++ compile command of Inductor: include and library folders glued to -I/-L
    gxx = scrub("g++ x.cpp -I/opt/py3/include/python3.11 -L/opt/py3/lib -ltorch -o /srv/a/b.so")
    assert "/opt/py3" not in gxx and "-I.../python3.11 -L.../lib -ltorch -o .../b.so" in gxx, gxx
    script = "#!/usr/bin/env python3\n# " + tb.replace("\n", "\n# ") + "\nimport sys\n"
    cleaned = scrub(script)
    assert cleaned.startswith("#!/usr/bin/env python3\n") and "worker.py" not in cleaned
    compile(cleaned, "repro.py", "exec")


def test_scrub_leaves_embedded_data_intact():
    """Regression (30-minute auto campaign on onnxruntime 1.20.1): the last, short line of a base64 block
    ended in "x/d1", which was cut to ".../d1" as if it were a path: the reproducer's input no longer
    decoded. Every line of an embedded block, short ones included, is data; a path after it is not."""
    import base64
    import zlib

    blob = base64.b64encode(zlib.compress(np.random.default_rng(0).bytes(300))).decode()
    lines = [blob[i:i + 100] for i in range(0, len(blob), 100)] + ["Kq+/Ab/d1w=="]  # a path-like tail
    short = base64.b64encode(b"\xfc\x1f\xa2/q" * 3).decode()
    assert "/" in short and len(short) < 60
    script = ('X = unpack(  # 75 float32 values\n"""\n' + "\n".join(lines) + '\n""", "float32", (75,))\n'
              f'Y = unpack(\n"""\n{short}\n""", "uint8", (15,))\n'
              'open("/home/me/runs/x/model.onnx")\n')
    out = scrub(script)
    assert "\n".join(lines) in out and f"\n{short}\n" in out
    assert "/home/me" not in out and ".../model.onnx" in out


def test_every_packaged_register_entry_is_specific():
    """Each entry's `match` names something narrower than a category (operators, a message or a configuration):
    a broad match once labelled a GatherND cluster with an unrelated entry."""
    for b in Register(use_env=False).bugs:
        assert not b.match or {"ops_all", "ops_any", "ops_subset", "message", "config"} & set(b.match), b.id
    ids = [b.id for b in Register(use_env=False).bugs]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_an_operator_beside_the_known_one_is_not_its_bug():
    """TVM's min/max over an empty axis is a graph of reductions alone: a GatherND cluster whose graph also
    holds a ReduceMax (once labelled with it) is not that bug."""
    reg = Register(use_env=False)

    def known(ops: set[str]) -> str | None:
        f = FindingFacts(1, "tvm", "wrong-result", ("tvm-unopt", "tvm-opt"), "", frozenset(ops),
                         frozenset({"float32"}), "", "wrong|tvm|tvm-unopt,tvm-opt|value", "value")
        k = reg.match(f)
        return k.id if k else None

    assert known({"reduce_max"}) == "tvm-reduce-min-max-empty-axis-uninitialized"
    assert known({"reduce_min", "reduce_max"}) == "tvm-reduce-min-max-empty-axis-uninitialized"
    assert known({"gather_nd", "reduce_max"}) is None


@pytest.mark.parametrize("category, configs, ops, dtypes, reason, message, expected", [
    # (issue-36 campaign, unreduced) a Slice shape difference beside an ArgMax was labelled argmax's -1 bug
    ("inconsistency", ("tvm-unopt", "tvm-onnx-opt"), {"argmax", "slice", "cos"}, {"int64", "float16"}, "shape", "",
     "tvm-onnx-slice-negative-step-start-clamp"),
    ("inconsistency", ("tvm-unopt", "tvm-onnx-opt"), {"argmax", "cos"}, {"int64"}, "value", "",
     "tvm-argmax-extreme-row"),
    # OneHot's int64 output beside an int32 ReduceMean was labelled R.mean's int32 bug
    ("inconsistency", ("tvm-unopt", "tvm-onnx-opt"), {"one_hot", "reduce_mean", "neg"}, {"int32", "float16"},
     "dtype", "", "tvm-onnx-onehot-output-dtype"),
    ("wrong-result", ("tvm-unopt",), {"reduce_mean"}, {"int32"}, "dtype", "", "tvm-mean-int32-dtype"),
    # a float64 RMSNorm NaN beside a float16 Sigmoid and a BatchNormalization was labelled batch_norm's float16 bug
    ("wrong-result", ("tvm-unopt", "tvm-onnx-opt"), {"rms_norm", "batch_norm", "sigmoid"}, {"float64", "float16"},
     "nan", "", "tvm-rms-norm-float64-in-float32"),
    ("unexpected-error", ("tvm-onnx-opt",), {"max_pool3d", "reciprocal"}, {"uint8"}, "",
     "InternalError: Check failed: (value >= 0) is false: cannot make uint from negative value -10",
     "tvm-onnx-maxpool3d-same-lower"),
    ("unexpected-error", ("tvm-opt",), {"sign"}, {"uint8"}, "", "cannot make uint from negative value -1",
     "tvm-sign-uint8"),
    # (issue 36's acceptance campaign) the negative-step Slice's empty axis, squeezed, fails the import
    ("unexpected-error", ("tvm-onnx-opt",), {"slice", "transpose", "squeeze"}, {"int64"}, "",
     "ValueError: Squeeze axis 0 has size 0, but only axes of size 1 can be squeezed.",
     "tvm-onnx-slice-negative-step-start-clamp"),
])
def test_a_specific_tvm_entry_wins_over_a_broad_one_whose_operator_sits_beside_it(
        category: str, configs: tuple[str, ...], ops: set[str], dtypes: set[str], reason: str, message: str,
        expected: str) -> None:
    """Entries are tried in file order: the narrow ones the issue-36 triage added come before the broad
    entries that claimed their unreduced findings, and the broad entries still claim their own."""
    kind = {"inconsistency": "inconsistency", "wrong-result": "wrong", "unexpected-error": "error"}[category]
    key = f"{kind}|tvm|{','.join(configs)}|{reason}|ops={','.join(sorted(ops))}"
    f = FindingFacts(1, "tvm", category, configs, "", frozenset(ops), frozenset(dtypes), "", key, reason)
    k = Register(use_env=False).match(f, message)
    assert k is not None and k.id == expected, k


def test_the_operators_inside_a_region_are_the_findings_operators(tmp_path):
    """A reduced graph's `if` branches hold the operator a register entry names: their operators count in the
    finding's facts (Graph.ops_used counts them too). Regression (issue 36's acceptance campaign on TVM 0.27): an
    RMSNormalization over every axis inside an If hit tvm-rms-norm-all-axes's error, yet was listed as new."""
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.serialize import save
    from dlcfuzz.ir.types import TensorType

    x, flag = TensorType("float32", (5,)), TensorType("bool", ())

    def branch(name: str) -> Graph:
        return Graph(inputs=[Value("x", x), Value("s", x)], outputs=["y"], name=name,
                     nodes=[Node("rms_norm", ["x", "s"], [Value("y", x)], {"axis": 0, "epsilon": 1e-3, "stash_type": 1},
                                 name="n")])

    g = Graph(inputs=[Value("c", flag), Value("x", x)], constants={"s": np.ones(5, np.float32)}, outputs=["y"],
              nodes=[Node("if", ["c", "x", "s"], [Value("y", x)],
                          {"then_branch": branch("then_branch"), "else_branch": branch("else_branch")}, name="if")])
    save(g, tmp_path / "reduced.json")
    row = {"id": 25, "compiler": "tvm", "category": "unexpected-error", "configs": '["tvm-onnx-opt"]',
           "key": "error|tvm|InternalError|InternalError: Check failed: shape.size() == indices.size() (N vs. N) : "
                  "Tensor dimension mismatch in read ndim = N, indices.size=N|_nn_rms_norm/call_te/gen_call_tir_inputs",
           "detail": "InternalError: Check failed: shape.size() == indices.size() (1 vs. 0) : Tensor dimension "
                     "mismatch in read ndim = 1, indices.size=0"}
    facts = facts_of(row, tmp_path)
    assert facts.ops == g.ops_used() == {"if", "rms_norm"} and "float32" in facts.dtypes
    assert Register(use_env=False).match(facts, row["detail"]).id == "tvm-rms-norm-all-axes"


def test_an_entry_can_name_the_reduced_nodes_attributes(tmp_path):
    """Two TVM LpPool bugs differ only in their attributes (SAME padding with dilations; ceil_mode's overhanging
    window): the facts carry the reduced graph's nodes with their attributes, and `attrs` matches them. Regression
    (issue 36's acceptance campaign on TVM 0.27, finding 69): a SAME-with-dilations LpPool whose key says `value`."""
    from dlcfuzz.ir.graph import Graph, Node, Value
    from dlcfuzz.ir.serialize import save
    from dlcfuzz.ir.types import TensorType

    t = TensorType("float32", (3, 5, 3, 2))
    attrs = {"auto_pad": "SAME_LOWER", "ceil_mode": 0, "dilations": [1, 2], "kernel": [1, 2], "p": 2,
             "pads": [0, 0, 0, 0], "strides": [1, 1]}
    save(Graph(inputs=[Value("r3", t)], nodes=[Node("lp_pool", ["r3"], [Value("v5", t)], attrs, name="n")],
               outputs=["v5"]), tmp_path / "reduced.json")
    row = {"id": 69, "compiler": "tvm", "category": "inconsistency", "configs": '["tvm-unopt", "tvm-onnx-opt"]',
           "key": "inconsistency|tvm|tvm-unopt|tvm-onnx-opt|value|ops=lp_pool|opts=none",
           "detail": "tvm-onnx-opt differs from tvm-unopt and the reference at output 6: distance 0.281 > 0.001"}
    facts = facts_of(row, tmp_path)
    assert facts.attrs == ("lp_pool{auto_pad=SAME_LOWER, ceil_mode=0, dilations=[1, 2], kernel=[1, 2], p=2, "
                           "pads=[0, 0, 0, 0], strides=[1, 1]}")
    assert FindingFacts.from_json(facts.to_json()) == facts
    reg = Register(use_env=False)
    assert reg.match(facts, row["detail"]).id == "tvm-onnx-lppool-same-dilations"
    assert reg.match(facts_of(row, graph=(facts.ops, facts.dtypes)), row["detail"]) is None  # no reduced graph


def test_a_programs_finding_has_its_programs_operators_attributes_and_dtypes(tmp_path):
    """A programs finding has no reduced graph: its facts come from its reduced program (`program.json`): the
    statements' ops (in bodies too), their attributes and the dtypes of the inputs and of the values stored beside
    it, so clusters and `dtypes_any` see them. Regression (issue 38): its report said "dtypes ?" and its issue
    "dtypes unknown"; a finding written before the dtypes were stored has its inputs' dtypes."""
    program = {"inputs": [["x0", "int32", [4], "contiguous"], ["x1", "float32", [4], "contiguous"]],
               "outputs": ["v3"],
               "stmts": [["to", ["x0"], {"dtype": "float16"}, "v0"],
                         ["cond", ["x1", "v0"], {"clone": [], "k": 1}, "v3",
                          [[["v0"], [["neg", ["v0"], {}, "v1"]], ["v1"]], [["v0"], [["abs", ["v0"], {}, "v2"]], ["v2"]]],
                          []]]}
    dtypes = {"x0": "int32", "x1": "float32", "v0": "float16", "v1": "float16", "v2": "float16", "v3": "float16"}
    (tmp_path / "program.json").write_text(json.dumps({**program, "dtypes": dtypes}))
    row = {"id": 3, "compiler": "inductor", "category": "inconsistency", "configs": '["eager", "inductor"]',
           "key": "inconsistency|inductor|inductor|value|output|ops=abs,cond,neg,to",
           "detail": "inductor differs from eager at output 0: distance from float64 0.5 > 2 x eager's 0 + 0.01"}
    facts = facts_of(row, tmp_path)
    assert facts.ops == {"to", "cond", "neg", "abs"} and facts.dtypes == {"int32", "float32", "float16"}
    assert facts.dtype_class == "float+half+int" and facts.attrs.splitlines()[0] == "to{dtype=float16}"
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"compiler": "inductor", "bugs": [
        {"id": "my-half-neg", "text": "neg of a half value", "match": {"ops_all": ["neg"], "dtypes_any": ["float16"]}}]}))
    assert Register(extra=[mine], use_env=False).match(facts, row["detail"]).id == "my-half-neg"
    (tmp_path / "program.json").write_text(json.dumps(program))  # written before the dtypes were stored
    older = facts_of(row, tmp_path)
    assert older.dtypes == {"int32", "float32"} and older.ops == facts.ops
    assert Register(extra=[mine], use_env=False).match(older, row["detail"]) is None


# issue 37's 2,000-test TVM false-positive run (seed 3): each finding's reduced facts (one `op{...}` line a node, as
# FindingFacts.attrs), message and the register entry that labels it, then a neighbour the entry must leave alone
ISSUE37_TVM = [
    # (category, configs, ops, dtypes, reason, attrs, message, expected entry or None)
    ("unexpected-error", ("tvm-onnx-opt",), {"max_unpool"}, {"float16"}, "",
     "max_unpool{indices=[1, 2], kernel=[3, 1, 3], pads=[2, 0, 1, 0, 0, 0], strides=[2, 1, 3]}",
     "InternalError: Check failed: (!expr->ty.IsMissing()) is false: The type is not populated",
     "tvm-onnx-maxunpool-pads-paired-by-begin"),
    ("unexpected-error", ("tvm-onnx-opt",), {"max_unpool"}, {"float16"}, "",  # pads whose pairing is right
     "max_unpool{indices=[1, 2], kernel=[3, 1, 3], pads=[0, 0, 0, 0, 0, 0], strides=[2, 1, 3]}",
     "InternalError: Check failed: (!expr->ty.IsMissing()) is false: The type is not populated", None),
    ("unexpected-error", ("tvm-onnx-opt",), {"roi_align", "concat"}, {"float16"}, "", "roi_align{mode=max}\nconcat{axis=-1}",
     "TypeError: Concat expects all input tensors to have the same dtype. However, the input contains tensors with "
     "dtype T.float32 and T.float16", "tvm-roi-align-float16-output-float32"),
    ("unexpected-error", ("tvm-onnx-opt",), {"grid_sample", "max_unpool"}, {"float16"}, "",
     "grid_sample{align_corners=0, mode=linear, padding_mode=zeros}\nmax_unpool{indices=[0], kernel=[1, 2], "
     "pads=[0, 0, 0, 0], strides=[1, 2]}", "TypeError: ScatterElements op requires the input data to have same type "
     "with updates. However, the given types are data: T.float16, updates: T.float32",
     "tvm-grid-sample-float16-output-float32"),
    ("unexpected-error", ("tvm-onnx-opt",), {"compress", "less_equal"}, {"int32", "bool"}, "",
     "compress{condition=[0, 1]}\nless_equal{}", "InternalError: CodeGenVM cannot emit this Relax operator directly.",
     "tvm-onnx-binary-symbolic-vs-constant-unlegalized"),
    ("unexpected-error", ("tvm-opt",), {"add"}, {"int32"}, "", "add{}",  # the same words without a symbolic length
     "InternalError: CodeGenVM cannot emit this Relax operator directly.", None),
    ("unexpected-error", ("tvm-unopt", "tvm-opt"), {"constant_of_shape"}, {"float64"}, "",
     "constant_of_shape{dtype=float64, shape=[1, 2], value=3.903935540826722e+306}",
     "ValueError: Check failed: value <= std::numeric_limits<float>::max() (3.90394e+306 vs. 3.40282e+38) : Literal "
     "value 3.90394e+306 exceeds maximum of float32", "tvm-full-float64-fill-beyond-float32"),
    ("inconsistency", ("tvm-unopt", "tvm-onnx-opt"), {"resize"}, {"float64"}, "inf",
     "resize{coordinate_transformation_mode=half_pixel, nearest_mode=ceil, sizes=[4, 1, 1, 5]}", "",
     "tvm-resize-pixels-through-float32"),
    ("wrong-result", ("tvm-unopt", "tvm-opt", "tvm-onnx-opt"), {"resize"}, {"int32"}, "value",
     "resize{coordinate_transformation_mode=asymmetric, nearest_mode=round_prefer_ceil, scales=[1.0, 1.0, 1.0, 1.5]}",
     "", "tvm-resize-pixels-through-float32"),
    ("wrong-result", ("tvm-unopt",), {"resize"}, {"float64"}, "value",  # linear: not only a copy of the pixels
     "resize{coordinate_transformation_mode=half_pixel, mode=linear, sizes=[4, 1, 1, 5]}", "", None),
    ("inconsistency", ("tvm-unopt", "tvm-onnx-opt"), {"space_to_depth"}, {"int8"}, "value",
     "space_to_depth{blocksize=3, mode=CRD}", "", "tvm-onnx-spacetodepth-opset28-mode-ignored"),
    ("inconsistency", ("tvm-unopt", "tvm-onnx-opt"), {"space_to_depth"}, {"int8"}, "value",
     "space_to_depth{blocksize=3}", "", None),
    ("unexpected-error", ("tvm-onnx-opt",), {"lrn"}, {"float32"}, "",
     "lrn{alpha=0.2162, beta=0.6622, bias=1.474, size=4}", 'ValueError: In ir.Op(name="relax.divide") the first input '
     "shape at dim 1 is T.int64(3) and the second input shape at dim 1 is T.int64(4), which are not broadcastable.",
     "tvm-onnx-lrn-even-size"),
    ("unexpected-error", ("tvm-onnx-opt",), {"lrn"}, {"float32"}, "",
     "lrn{alpha=0.2162, beta=0.6622, bias=1.474, size=3}", 'ValueError: In ir.Op(name="relax.divide") the first input '
     "shape at dim 1 is T.int64(3) and the second input shape at dim 1 is T.int64(4), which are not broadcastable.", None),
    ("unexpected-error", ("tvm-onnx-opt",), {"range", "min"}, {"int32"}, "", "range{delta=-2}\nmin{}",
     "ValueError: operands could not be broadcast together with remapped shapes [original->remapped]: (0,)  and "
     "requested shape (1,)", "tvm-onnx-variadic-constant-fold-empty-broadcast"),
    ("unexpected-error", ("tvm-onnx-opt",), {"slice", "gelu", "scatter_nd"}, {"float16"}, "",
     "slice{steps=[1, 3, -1, 2]}\ngelu{}\nscatter_nd{reduction=min}",
     "InternalError: Check failed: pb->value != 0 (0 vs. 0) : Divide by zero",
     "tvm-onnx-slice-negative-step-start-clamp"),
    # the run's findings from test 780 on (triaged in a second pass)
    ("wrong-result", ("tvm-unopt", "tvm-opt"), {"atanh", "reciprocal"}, {"float32"}, "inf", "atanh{}\nreciprocal{}", "",
     "tvm-atanh-near-zero-cancels"),
    ("wrong-result", ("tvm-unopt", "tvm-opt"), {"atanh", "matmul"}, {"float32"}, "value", "atanh{}\nmatmul{}", "",
     None),  # atanh's small absolute error amplified by nothing the entry names
    ("unexpected-error", ("tvm-onnx-opt",), {"lp_pool", "scatter_nd"}, {"float64"}, "",
     "lp_pool{auto_pad=SAME_LOWER, ceil_mode=0, dilations=[2], kernel=[3], p=2, pads=[0, 0], strides=[3]}\n"
     "scatter_nd{index_shape=[3, 3, 2], reduction=none}", "ValueError: ScatterND op requires the updates tensor to "
     "have the shape with constraint: `updates.shape = indices.shape[:-1] + data.shape[K:]`, but got updates.shape: "
     "R.shape([3, 3, 3]), indices.shape: R.shape([3, 3, 2]), data.shape: R.shape([9, 5, 2])",
     "tvm-onnx-lppool-same-dilations"),
    ("unexpected-error", ("tvm-onnx-opt",), {"lp_pool", "scatter_nd"}, {"float64"}, "",  # no dilation
     "lp_pool{auto_pad=SAME_LOWER, ceil_mode=0, dilations=[1], kernel=[3], p=2, pads=[0, 0], strides=[3]}\n"
     "scatter_nd{index_shape=[3, 3, 2], reduction=none}", "ValueError: ScatterND op requires the updates tensor to "
     "have the shape with constraint: `updates.shape = indices.shape[:-1] + data.shape[K:]`", None),
    ("unexpected-error", ("tvm-onnx-opt",), {"lp_pool", "log_softmax"}, {"float32"}, "",
     "lp_pool{auto_pad=SAME_LOWER, ceil_mode=0, dilations=[2, 2], kernel=[3, 3], p=2, pads=[0, 0, 0, 0], "
     "strides=[1, 1]}\nlog_softmax{axis=0}", "ValueError: negative dimensions are not allowed",
     "tvm-onnx-lppool-same-dilations"),
    ("unexpected-error", ("tvm-onnx-opt",), {"lp_pool", "log_softmax"}, {"float32"}, "",  # explicit pads
     "lp_pool{auto_pad=NOTSET, ceil_mode=0, dilations=[2, 2], kernel=[3, 3], p=2, pads=[0, 0, 0, 0], "
     "strides=[1, 1]}\nlog_softmax{axis=0}", "ValueError: negative dimensions are not allowed", None),
    ("unexpected-error", ("tvm-onnx-opt",), {"dropout", "xor"}, {"float64", "bool"}, "",
     "dropout{mask=1, ratio=0.17339999973773956}\nxor{}", "InternalError: Check failed: (lhs.ty().MatchesCode("
     "DLDataTypeCode::kDLInt, DLDataTypeCode::kDLUInt, DLDataTypeCode::kDLBool)) is false: Expected integer argument "
     "as LHS of ^ operator (bitwise XOR), but received T.te.tensor_load", "tvm-onnx-dropout-mask-not-bool"),
    ("unexpected-error", ("tvm-onnx-opt",), {"cast", "xor"}, {"float64", "bool"}, "", "cast{to=float64}\nxor{}",
     "InternalError: Check failed: Expected integer argument as LHS of ^ operator (bitwise XOR)", None),
    ("wrong-result", ("tvm-unopt", "tvm-opt", "tvm-onnx-opt"), {"hardmax"}, {"float64"}, "value", "hardmax{axis=-3}",
     "", "tvm-argmax-extreme-row"),
    ("wrong-result", ("tvm-unopt", "tvm-opt", "tvm-onnx-opt"), {"softmax"}, {"float64"}, "value", "softmax{axis=-3}",
     "", None),
    ("unexpected-error", ("tvm-unopt",), {"range", "cumsum"}, {"int32"}, "", "range{delta=-2}\ncumsum{reverse=1}",
     'ValueError: Argument 0 type mismatch: expected R.Tensor((2,), dtype="int32"), given R.Tensor((1,), '
     'dtype="int32")', "tvm-arange-negative-step-length"),
    ("unexpected-error", ("tvm-unopt",), {"cumsum"}, {"int32"}, "", "cumsum{reverse=1}",  # no Range
     'ValueError: Argument 0 type mismatch: expected R.Tensor((2,), dtype="int32"), given R.Tensor((1,), '
     'dtype="int32")', None),
    ("unexpected-error", ("tvm-onnx-opt",), {"lrn"}, {"float32"}, "",
     "lrn{alpha=0.031039999797940254, beta=0.7253999710083008, bias=1.8960000276565552, size=5}",
     "InternalError: LLVM module verification failed with the following errors: \nInstruction does not dominate all "
     "uses!", "tvm-llvm-lrn-broken-module"),
    ("crash", ("tvm-onnx-opt",), {"resize", "scatter_nd"}, {"bool"}, "",
     "resize{coordinate_transformation_mode=align_corners, nearest_mode=round_prefer_ceil, sizes=[3, 1, 4]}\n"
     "scatter_nd{index_shape=[3, 1], reduction=none}", "killed by signal 6 (SIGABRT) during run of tvm-onnx-opt",
     "tvm-onnx-resize-batch-channel-ignored"),
    ("crash", ("tvm-onnx-opt",), {"scatter_nd"}, {"bool"}, "", "scatter_nd{index_shape=[3, 1], reduction=none}",
     "killed by signal 6 (SIGABRT) during run of tvm-onnx-opt", None),  # no Resize
    ("unexpected-error", ("tvm-onnx-opt",), {"softmax"}, {"float32"}, "", "softmax{axis=1}",  # not an LRN
     "InternalError: LLVM module verification failed with the following errors: \nInstruction does not dominate all "
     "uses!", None),
]


@pytest.mark.parametrize("category, configs, ops, dtypes, reason, attrs, message, expected", ISSUE37_TVM,
                         ids=[f"{k}-{c[-1]}" for k, c in enumerate(ISSUE37_TVM)])
def test_issue37_tvm_findings_are_labelled_by_their_entries_and_their_neighbours_are_not(
        category: str, configs: tuple[str, ...], ops: set[str], dtypes: set[str], reason: str, attrs: str, message: str,
        expected: str | None) -> None:
    kind = {"inconsistency": "inconsistency", "wrong-result": "wrong", "unexpected-error": "error", "crash": "crash"}[category]
    key = f"{kind}|tvm|{','.join(configs)}|{reason}|ops={','.join(sorted(ops))}"
    f = FindingFacts(1, "tvm", category, configs, "", frozenset(ops), frozenset(dtypes), "", key, reason, attrs)
    k = Register(use_env=False).match(f, message)
    assert (k.id if k else None) == expected, k


# issue 37's XLA false-positive run (jax 0.10.2): its finding's reduced facts, then the neighbours its entry must leave
# alone: one division (the rewrite needs two), bfloat16 (computed in float32 there, not rewritten), another pass, an
# operator beside the divisions
ISSUE37_XLA = [
    # (category, configs, opts, ops, dtypes, attrs, message, expected entry or None)
    ("inconsistency", ("xla-nopasses", "xla"), "pass:algsimp", {"softsign"}, {"float16"}, "softsign{}\nsoftsign{}",
     "xla differs from xla-nopasses and the reference at output 0: distance 0.422 > 0.01 (flat index 4: "
     "np.float16(-0.2338) vs np.float16(-0.6553))", "xla-algsimp-divide-reassociation-overflow"),
    ("wrong-result", ("xla",), "pass:algsimp", {"div"}, {"float32"}, "div{}\ndiv{}",  # (a / b) / c, run with jax alone
     "xla differs from the reference at output 0", "xla-algsimp-divide-reassociation-overflow"),
    ("inconsistency", ("xla-nopasses", "xla"), "pass:algsimp", {"softsign"}, {"float16"}, "softsign{}",
     "xla differs from xla-nopasses and the reference at output 0", None),
    ("inconsistency", ("xla-nopasses", "xla"), "pass:algsimp", {"softsign"}, {"bfloat16"}, "softsign{}\nsoftsign{}",
     "xla differs from xla-nopasses and the reference at output 0", None),
    ("inconsistency", ("xla-nopasses", "xla"), "pass:fusion", {"softsign"}, {"float16"}, "softsign{}\nsoftsign{}",
     "xla differs from xla-nopasses and the reference at output 0", None),
    ("inconsistency", ("xla-nopasses", "xla"), "pass:algsimp", {"softsign", "swish"}, {"float16"},
     "softsign{}\nswish{alpha=0.50390625}\nsoftsign{}", "xla differs from xla-nopasses and the reference at output 0",
     None),
]


@pytest.mark.parametrize("category, configs, opts, ops, dtypes, attrs, message, expected", ISSUE37_XLA,
                         ids=[f"{k}-{c[-1]}" for k, c in enumerate(ISSUE37_XLA)])
def test_issue37_xla_findings_are_labelled_by_their_entries_and_their_neighbours_are_not(
        category: str, configs: tuple[str, ...], opts: str, ops: set[str], dtypes: set[str], attrs: str, message: str,
        expected: str | None) -> None:
    kind = {"inconsistency": "inconsistency", "wrong-result": "wrong"}[category]
    key = f"{kind}|xla|{','.join(sorted(configs))}|opts={opts}"
    f = FindingFacts(1, "xla", category, configs, f"opts={opts}", frozenset(ops), frozenset(dtypes), "", key, "", attrs)
    k = Register(use_env=False).match(f, message)
    assert (k.id if k else None) == expected, k


# issue 37's Inductor false-positive run (torch 2.13.0): finding 3, torch.cond refusing identical Max(1, s) strides
# (the configuration "eager" traced its second cond with automatic dynamic shapes), the same refusal under
# torch.compile(dynamic=True), then neighbours its entry must leave alone: branches whose strides differ, a stride
# without Max (a slice that is not dense; the other refusal, of a different order of strides, is sfdp-18's entry's)
_COND_SIZE = "torch.Size([s85, 12, s56 - 2, (((s94 - 3)//2)) + 1])"
_COND_STRIDE = ("(12*Max(1, s56 - 2)*Max(1, (((s94 - 3)//2)) + 1), Max(1, s56 - 2)*Max(1, (((s94 - 3)//2)) + 1), "
                "Max(1, (((s94 - 3)//2)) + 1), 1)")
_COND_REFUSED = ("TorchRuntimeError: RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX node "
                 "with fake tensors: call_function cond(...): got RuntimeError(\"It seems one of cond's output stride is "
                 "not a simple accumulative multiplication of sizes. This could be because cond returns a slice of a "
                 "tensor, which is not dense in memory. True branch has size {}, stride {} and false branch has size {} "
                 "stride {}. Hint: can call t.contiguous(). \")")
_STRIDE_ORDER_REFUSED = ("TorchRuntimeError: RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX "
                         "node with fake tensors: call_function cond(...): got RuntimeError(\"The sorted order of strides "
                         "of the two branches' output doesn't match.this indicates the contiguousness of the two branches "
                         "are different. True branch has stride (25, 5, 1, 1) but false branch has stride (25, 1, 5, 5)."
                         "Consider using contiguous() to make the two branches have the same contiguousness.\")")
ISSUE37_INDUCTOR = [
    # (category, configs, ops, message, expected entry or None)
    ("unexpected-error", ("eager",), {"cast_like", "conv2d", "depth_to_space", "div", "greater", "if", "lrn", "max", "neg",
                                      "reduce_log_sum", "reduce_max", "reduce_sum", "sqrt", "unsqueeze"},
     _COND_REFUSED.format(_COND_SIZE, _COND_STRIDE, _COND_SIZE, _COND_STRIDE), "inductor-cond-max-stride-refused"),
    ("unexpected-error", ("eager", "inductor+dynamic"), {"if", "conv2d"},
     _COND_REFUSED.format("torch.Size([s85, 12, s56 - 1, s94 - 2])", "(12*Max(1, s56 - 1)*Max(1, s94 - 2), "
                          "Max(1, s56 - 1)*Max(1, s94 - 2), Max(1, s94 - 2), 1)", "torch.Size([s85, 12, s56 - 1, s94 - 2])",
                          "(12*Max(1, s56 - 1)*Max(1, s94 - 2), Max(1, s56 - 1)*Max(1, s94 - 2), Max(1, s94 - 2), 1)"),
     "inductor-cond-max-stride-refused"),
    ("unexpected-error", ("eager",), {"if", "conv2d"},  # the branches' strides differ
     _COND_REFUSED.format("torch.Size([s0, s1])", "(Max(1, s1), 1)", "torch.Size([s0, s1])", "(s1 + 1, 1)"), None),
    ("unexpected-error", ("eager",), {"if", "slice"},  # a slice, not dense: no Max
     _COND_REFUSED.format("torch.Size([s0, 2])", "(2*s1, 1)", "torch.Size([s0, 2])", "(2*s1, 1)"), None),
    # findings 6 and 7: branches the lowering returned in two layouts (ours, fixed), eagerly and in aot_eager: not
    # inductor-sfdp-18-strides-cond-refused, which is the refusal in the Inductor stage past SDPA's layout
    ("unexpected-error", ("eager",), {"if", "attention", "neg"}, _STRIDE_ORDER_REFUSED, None),
    ("unexpected-error", ("inductor",), {"if", "attention", "neg"}, f"StageError: [stage aot_eager] {_STRIDE_ORDER_REFUSED}",
     None),
    ("unexpected-error", ("inductor",), {"if", "attention", "neg"}, f"StageError: [stage inductor] {_STRIDE_ORDER_REFUSED}",
     "inductor-sfdp-18-strides-cond-refused"),
    # finding 5: a grouped conv2d's output (channels-last in Inductor) as a conditional's operand; an assertion on a
    # buffer Inductor made itself (no "Error in op: input") is another bug
    ("unexpected-error", ("inductor",), {"if", "conv2d"},
     "StageError: [stage inductor] AssertionError: expected size 6==6, stride 1==4 at dim=1; expected size 4==4, stride "
     "6==1 at dim=2\nError in op: input\nThis error most often comes from a incorrect fake (aka meta) kernel for a custom op.",
     "inductor-cond-operand-layout-stride-assert"),
    ("unexpected-error", ("inductor",), {"conv2d", "relu"},
     "StageError: [stage inductor] AssertionError: expected size 6==6, stride 1==4 at dim=1", None),
]


@pytest.mark.parametrize("category, configs, ops, message, expected", ISSUE37_INDUCTOR,
                         ids=[f"{k}-{c[-1]}" for k, c in enumerate(ISSUE37_INDUCTOR)])
def test_issue37_inductor_findings_are_labelled_by_their_entries_and_their_neighbours_are_not(
        category: str, configs: tuple[str, ...], ops: set[str], message: str, expected: str | None) -> None:
    key = f"error|inductor|TorchRuntimeError|TorchRuntimeError: RuntimeError when making fake tensor call|{','.join(configs)}"
    f = FindingFacts(3, "inductor", category, configs, "", frozenset(ops), frozenset({"float32"}), "", key, "", "")
    k = Register(use_env=False).match(f, message)
    assert (k.id if k else None) == expected, k


ISSUE37_INDUCTOR_DTYPES = [
    # (ops, dtypes, message, expected entry or None): an output dtype that differs
    ({"einsum"}, {"int32"}, "inductor differs from eager and the reference at output 5: dtype int64 != int32",
     "inductor-cpu-bmm-m1-integer-output-int64"),
    ({"matmul", "relu"}, {"int8"}, "inductor differs from eager and the reference at output 0: dtype int64 != int8",
     "inductor-cpu-bmm-m1-integer-output-int64"),
    ({"einsum"}, {"int64"}, "inductor differs from eager and the reference at output 0: dtype float32 != int64", None),
    ({"cumsum"}, {"int32"}, "inductor differs from eager and the reference at output 0: dtype int64 != int32", None),
    ({"einsum"}, {"float32"}, "inductor differs from eager and the reference at output 0: distance 3 > 0.001", None),
]


@pytest.mark.parametrize("ops, dtypes, message, expected", ISSUE37_INDUCTOR_DTYPES,
                         ids=[f"{k}-{c[-1]}" for k, c in enumerate(ISSUE37_INDUCTOR_DTYPES)])
def test_issue37_inductor_dtype_findings_are_labelled_by_their_entry_and_their_neighbours_are_not(
        ops: set[str], dtypes: set[str], message: str, expected: str | None) -> None:
    key = f"inconsistency|inductor|eager|inductor|dtype|ops={','.join(sorted(ops))}|opts=none"
    f = FindingFacts(4, "inductor", "inconsistency", ("eager", "inductor"), "", frozenset(ops), frozenset(dtypes), "",
                     key, "", "")
    k = Register(use_env=False).match(f, message)
    assert (k.id if k else None) == expected, k

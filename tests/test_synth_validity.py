"""OATest synthesis is valid by construction: spliced and re-concretized patterns keep index
constants inside their new shapes, reshape targets are recomputed, every node is re-inferred, and
the validity check (type rules + strict value domains) decides before the NumPy reference runs.
Fuzz the synthesizer in-process (no compiler needed) with the mined ONNXRuntime patterns and the
built-in library; the patterns that ship with dlcfuzz are what extraction from the corpus gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlcfuzz import reference
from dlcfuzz.errors import ShapeError
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import check_graph, get_op
from dlcfuzz.synth import synthesize
from dlcfuzz.synth.library import default_patterns, library
from dlcfuzz.synth.pattern import (
    Pattern,
    load_patterns,
    read_pattern_file,
    save_patterns,
    shipped_pattern_file,
)
from dlcfuzz.synth.synthesize import Synthesizer, retype, strict_faults, usable_pattern, validity_fault

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "ort-optimizer-tests"
NO_CORPUS = "the ORT optimizer-test corpus (../shared/corpora/ort-optimizer-tests) is absent"


@pytest.fixture(scope="module")
def mined() -> tuple[list[Pattern], object]:
    """The patterns `dlcfuzz patterns extract --from ort-optimizer-tests` makes (a few seconds)."""
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    pytest.importorskip("onnx", reason="onnx is not installed")
    from dlcfuzz.synth.extract import extract_onnx_dir

    return extract_onnx_dir(CORPUS, compiler="onnxruntime", max_nodes=12)


def synthesize_and_check(syn: Synthesizer, seeds: range | list[int]) -> Counter:
    """Each seed: one synthesis, which must not raise, must pass the IR checker and the strict value
    domains, and must run in the NumPy reference (non-finite values are the oracle's business, an
    exception is not). Returns what was made: spliced (a pattern in it) or plain seed graphs."""
    made: Counter = Counter()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        s = syn.next(rng)
        check_graph(s.graph)
        assert strict_faults(s.graph) == [], (seed, s.pattern)
        out = reference.run(s.graph, sample_inputs(s.graph, rng))
        assert set(out) == set(s.graph.outputs)
        made["spliced" if s.pattern else "unspliced"] += 1
        if s.pattern:
            syn.accept(s)  # high-order synthesis grows from them, as in a campaign
    # refusals are our type rules' and domains' own, never another exception swallowed
    assert not [r for r in syn.rejected if r.startswith("error:")], syn.rejected
    return made


def test_synthesis_with_the_shipped_patterns_never_raises_and_every_graph_runs() -> None:
    pats = default_patterns("onnxruntime")
    assert len(pats) > len(library()) + 300  # the mined patterns ship
    syn = Synthesizer(pats, "onnxruntime")
    made = synthesize_and_check(syn, range(2000))
    assert made["spliced"] >= 0.97 * 2000, (made, syn.rejected.most_common(5))
    # balanced by optimization: mined and hand-written patterns both get chosen
    assert len(syn.by_optimization) >= 25


def test_synthesis_with_the_mined_corpus_patterns_never_raises(mined) -> None:
    patterns, _ = mined
    syn = Synthesizer(patterns + library(), "onnxruntime")
    made = synthesize_and_check(syn, range(10_000, 10_500))
    assert made["spliced"] >= 0.97 * 500, (made, syn.rejected.most_common(5))


def test_synthesis_for_tvm_never_raises() -> None:
    syn = Synthesizer(default_patterns("tvm"), "tvm")
    made = synthesize_and_check(syn, range(600))
    assert made["spliced"] >= 0.97 * 600


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), compiler=st.sampled_from(["onnxruntime", "tvm"]),
       seed_ops=st.integers(2, 10))
def test_synthesis_holds_for_hypothesis_chosen_seeds(seed: int, compiler: str, seed_ops: int) -> None:
    syn = _synthesizer(compiler, seed_ops)
    pool = list(syn.pool)
    synthesize_and_check(syn, [seed, seed + 1])
    syn.pool = pool  # each example starts from the same pool: examples do not depend on their order


_SYNTHESIZERS: dict[tuple[str, int], Synthesizer] = {}


def _synthesizer(compiler: str, seed_ops: int) -> Synthesizer:
    key = (compiler, seed_ops)
    if key not in _SYNTHESIZERS:
        _SYNTHESIZERS[key] = Synthesizer(default_patterns(compiler), compiler, seed_ops=seed_ops)
    return _SYNTHESIZERS[key]


def test_every_shipped_pattern_retyped_is_valid_or_refused() -> None:
    """Re-concretization of each pattern for other hole shapes (the step where issue 20's gather
    indices and pad crops went out of range): the result is None or a graph that passes the validity
    check and runs in the reference."""
    rng = np.random.default_rng(20)
    retyped = 0
    for p in default_patterns("onnxruntime"):
        for _ in range(3):
            bound = {h.name: h.example.with_shape(tuple(int(rng.integers(1, d + 2)) for d in h.example.shape))
                     for h in p.holes}
            g = retype(p, bound)
            if g is None:
                continue
            assert validity_fault(g) is None, p.name
            reference.run(g, sample_inputs(g, rng))
            retyped += 1
    assert retyped >= 500


# ---- the repairs, one by one (the faults of issue 20) -----------------------------------------

def _gather_pattern() -> Pattern:
    """Gathers from a hole with index constants that fit its example shape (length 6) only."""
    x = Value("x", TensorType("float32", (6,)))
    g = Graph([x], {"i": np.array([5, -6, 2], np.int64)},
              [Node("gather", ["x", "i"], [Value("y", TensorType("float32", (3,)))], {"axis": 0}, name="g")], ["y"])
    check_graph(g)
    return Pattern("gather_consts", g, {"onnxruntime": ["ConstantFolding"]})


def test_retype_brings_gather_indices_inside_the_new_shape() -> None:
    g = retype(_gather_pattern(), {"x": TensorType("float32", (2,))})
    assert g is not None and validity_fault(g) is None
    assert g.constants["i"].min() >= -2 and g.constants["i"].max() <= 1
    assert len(set(g.constants["i"].tolist())) == 2  # wrapped around, not all clamped to one end
    reference.run(g, {"x": np.arange(2, dtype=np.float32)})


def test_retype_recomputes_a_reshape_target_for_the_new_element_count() -> None:
    x = Value("x", TensorType("float32", (4, 6)))
    g = Graph([x], {}, [Node("reshape", ["x"], [Value("r", TensorType("float32", (4, 2, 3)))], {"shape": [4, 2, 3]},
                             name="r"), Node("relu", ["r"], [Value("y", TensorType("float32", (4, 2, 3)))], {}, name="a")],
              ["y"])
    out = retype(Pattern("reshape_relu", g, {"onnxruntime": ["ReshapeFusion"]}), {"x": TensorType("float32", (5, 6))})
    assert out is not None and out.output_types() == [TensorType("float32", (5, 2, 3))]  # (4, 2, 3) rescaled
    reference.run(out, {"x": np.ones((5, 6), np.float32)})


def test_pad_crops_are_bounded_by_the_dimension_they_crop() -> None:
    pad = get_op("pad")
    t = TensorType("float32", (4, 6, 4, 1))
    with pytest.raises(ShapeError):  # crop 2 from a dimension of 1, then pad 6: was typed (.., 5)
        pad.infer([t], {"pads": [1, 3, 4, -2, 5, 7, 8, 6], "mode": "constant", "value": 0.0})
    ok = {"pads": [1, 3, 4, -1, 5, 7, 8, 6], "mode": "constant", "value": 0.0}
    (out,) = pad.infer([t], ok)
    assert pad.reference([np.ones(t.shape, np.float32)], ok)[0].shape == out.shape


def test_a_pattern_computing_an_index_is_dropped_and_counted_not_raised() -> None:
    x = Value("x", TensorType("float32", (6,)))
    g = Graph([x], {}, [Node("argmax", ["x"], [Value("a", TensorType("int64", ()))], {"axis": 0, "keepdims": 0},
                             name="m"),
                        Node("gather", ["x", "a"], [Value("y", TensorType("float32", ()))], {"axis": 0}, name="g")],
              ["y"])
    check_graph(g)
    bad = Pattern("computed_index", g, {"onnxruntime": ["ConstantFolding"]})
    assert strict_faults(g) and usable_pattern(bad)[0] is None
    syn = Synthesizer([bad, *library()], "onnxruntime")
    assert "computed_index" not in {p.name for p in syn.patterns} and sum(syn.dropped.values()) == 1


def test_next_gives_a_valid_seed_graph_when_every_splice_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pattern's fault never escapes `Synthesizer.next`: an attempt our type rules refuse is
    counted, and when every attempt fails the seed graph itself is the test."""
    def refused(*args: object, **kwargs: object) -> None:
        raise ShapeError("refused")

    monkeypatch.setattr(synthesize, "splice", refused)
    syn = Synthesizer(library(), "onnxruntime")
    s = syn.next(np.random.default_rng(0), tries=3)
    assert s.pattern == "" and syn.unspliced == 1 and syn.rejected["type: ShapeError"] == 3
    check_graph(s.graph)


# ---- the patterns that ship ------------------------------------------------------------------

@pytest.mark.parametrize("compiler,corpus,folder", [
    ("onnxruntime", "ort-optimizer-tests", "ConvActivationFusion"),
    ("tvm", "tvm-5d4dc87-relax-transform-tests", "test_transform_fold_constant.py"),
])
def test_the_shipped_patterns_record_their_source_and_stay_small(compiler: str, corpus: str, folder: str) -> None:
    path = shipped_pattern_file(compiler)
    assert path is not None and path.stat().st_size < 250_000  # package data stays small (492 ORT patterns: 213 kB)
    patterns, source = read_pattern_file(path)
    assert source["corpus"] == corpus and source["compiler"] == compiler
    assert folder in source["folders"] and source["date"]
    assert source["command"].startswith(f"dlcfuzz patterns extract --{'from' if compiler == 'onnxruntime' else 'pytest'} "
                                        f"{corpus}")
    assert not any(str(v).startswith("/") for v in source.values())  # no path of the machine that made it
    assert len(patterns) >= 20 and all(p.targets[compiler] for p in patterns)
    assert all(usable_pattern(p)[0] is p for p in patterns)  # shipped as synthesis uses them
    assert len(default_patterns(compiler)) == len(library()) + len(patterns)


def test_shipped_pattern_files_by_compiler() -> None:
    from dlcfuzz.backends import get_backend

    planted = get_backend("planted:fusion@MatMulAddFusion").pattern_targets()  # a wrapper names what it wraps
    assert shipped_pattern_file(planted) == shipped_pattern_file("onnxruntime")
    assert shipped_pattern_file("no-such-compiler") is None


def test_regenerating_from_the_corpus_gives_the_shipped_patterns(mined, tmp_path: Path) -> None:
    patterns, report = mined
    shipped = load_patterns(shipped_pattern_file("onnxruntime"))
    assert [p.to_json() for p in patterns] == [p.to_json() for p in shipped]
    again = save_patterns(patterns, tmp_path / "onnxruntime.json.gz", source=report.provenance)
    assert read_pattern_file(again)[1]["command"] == read_pattern_file(shipped_pattern_file("onnxruntime"))[1]["command"]

"""The oracle's table (oracle/categories.py): a new category is one row, and its issue text, reproducer
behaviour and clustering follow from it; the dedup keys the judges build stay byte-identical."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from dlcfuzz.backends import get_backend
from dlcfuzz.backends.script import error_type_line
from dlcfuzz.engine.clusters import FindingFacts, facts_of
from dlcfuzz.engine.issue import expected_behaviour
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import CATEGORIES, Category, DedupKey, add_category, dedup_key, with_option
from dlcfuzz.oracle.policy import routine_unknown
from dlcfuzz.oracle.testcase import Observation
from dlcfuzz.oracle.verdict import judge


@pytest.fixture
def too_many_nodes() -> Iterator[Category]:
    """The recipe of docs/architecture.md's "Add an oracle": one row."""
    row = add_category(Category("too-many-nodes", "bug", clustered_by_ops=True, key_tag="nodes",
                                expected="The optimized graph is not larger than the model ({valid})."))
    yield row
    del CATEGORIES[row.name]


def test_a_new_category_flows_to_issue_text_clusters_and_scripts(too_many_nodes: Category) -> None:
    ort = get_backend("onnxruntime")
    assert expected_behaviour("too-many-nodes", ort, ["ort-all"]) == (
        "The optimized graph is not larger than the model (ONNX's checker and the operators' specification "
        "accept it).")
    key = dedup_key("too-many-nodes", "onnxruntime", "ort-all")
    assert key == "nodes|onnxruntime|ort-all"
    row = {"id": 3, "compiler": "onnxruntime", "category": "too-many-nodes", "configs": '["ort-all"]',
           "key": with_option(key, "ops", "add,relu"), "detail": "ort-all: 9 nodes from 4"}
    facts = facts_of(row)
    assert facts.numeric and facts.ops == {"add", "relu"}  # clustered by its operators, as its row says
    assert facts.cluster_key()[0] == "numeric"
    assert "REPRO = 'compare'" in error_type_line("too-many-nodes", "")
    assert not routine_unknown("too-many-nodes")


def test_rows_of_the_built_in_categories() -> None:
    assert routine_unknown("expected-error:unsupported") and routine_unknown(C.NOT_LOWERABLE)
    assert not routine_unknown(C.SEED_REJECTED)
    # a documented limitation (OpenVINO's CPU plugin: int64 in int32) is counted apart, and kept: it is the compiler's
    assert CATEGORIES[C.DOCUMENTED_LIMITATION].kind == "unknown" and not routine_unknown(C.DOCUMENTED_LIMITATION)
    assert "REPRO = 'error'" in error_type_line(C.UNEXPECTED_ERROR, "ValueError: x")
    assert "REPRO = 'accepted'" in error_type_line(C.ACCEPTED_INVALID, "")
    assert FindingFacts(1, "tvm", C.SLOW, (), "", frozenset(), frozenset(), "").numeric  # clustered like numbers
    assert C.category_of("expected-error:unsupported") is CATEGORIES[C.EXPECTED_ERROR]
    assert C.category_of("pass:extra") is None


def test_keys_stay_as_stored() -> None:
    """The stored form is unchanged: `tag|compiler|fields`, options appended."""
    obs = [Observation("ort-disable", "ok", outputs=[np.zeros(2, np.float32)]),
           Observation("ort-all", "ok", outputs=[np.ones(2, np.float32)]),
           Observation("ort-basic", "error", error="Fail: [ONNXRuntimeError] : 1 : FAIL : bad thing 42")]
    verdicts = judge("onnxruntime", lambda m: None, None, obs)
    keys = {v.category: v.key for v in verdicts}
    assert keys[C.UNEXPECTED_ERROR] == "error|onnxruntime|Fail|Fail: [ONNXRuntimeError] : N : FAIL : bad thing N|"
    assert keys[C.INCONSISTENCY] == "inconsistency|onnxruntime|ort-disable|ort-all|value"
    k = DedupKey.parse(with_option(keys[C.INCONSISTENCY], "opts", "A,B"))
    assert str(k) == "inconsistency|onnxruntime|ort-disable|ort-all|value|opts=A,B" and k.option("opts") == "A,B"


def test_native_frames_are_backend_facts() -> None:
    """Crash signatures keep the compiler's own frames: XLA's fatal log line (as jaxlib 0.x writes it),
    OpenVINO's rethrow locations; another compiler's patterns do not see them."""
    from dlcfuzz.oracle.signature import top_frames

    xla_stderr = ("F1128 18:48:05.848428    8577 parse_flags_from_env.cc:234] Unknown flag in XLA_FLAGS: --xla_x\n"
                  "Fatal Python error: Aborted\n")
    assert top_frames(xla_stderr, native=get_backend("xla").frame_patterns) == ["parse_flags_from_env.cc"]
    assert top_frames(xla_stderr, native=get_backend("onnxruntime").frame_patterns) == []
    ov_error = ("Exception from src/inference/src/cpp/core.cpp:105:\n"
                "Exception from src/inference/src/model_reader.cpp:188:\nUnable to read the model.\n")
    assert top_frames(ov_error, native=get_backend("openvino").frame_patterns) == ["core.cpp", "model_reader.cpp"]
    torch_error = ("RuntimeError: boom\nException raised from foo at /src/aten/X.cpp:12 (most recent call first):\n"
                   "frame #0: c10::Error::Error(c10::SourceLocation) + 0x96 (0x7f00 in libc10.so)\n"
                   "frame #1: at::native::add_out(at::Tensor const&) + 0x12 (0x7f01 in libtorch_cpu.so)\n")
    assert top_frames(torch_error, native=get_backend("inductor").frame_patterns) == [
        "c10::Error::Error", "at::native::add_out"]


def test_openvino_torch_front_door_is_code_and_lists_torch() -> None:
    from dlcfuzz.engine.issue import environment

    ov = get_backend("openvino")
    assert "ov-torch" in ov.configs()  # torch is installed with every compiler here
    assert "runs it eagerly" in expected_behaviour(C.UNEXPECTED_ERROR, ov, ["ov-torch"])
    assert "ONNX's checker" in expected_behaviour(C.UNEXPECTED_ERROR, ov, ["ov-cpu"])
    assert "torch" in dict(environment(ov, ["ov-torch"], "openvino 1"))
    assert "torch" not in dict(environment(ov, ["ov-cpu"], "openvino 1"))
    # the `ort` cross-check runs onnxruntime, so an issue about it lists onnxruntime's version
    assert "onnxruntime" in dict(environment(ov, ["ort"], "openvino 1"))
    assert "onnxruntime" not in dict(environment(ov, ["ov-cpu"], "openvino 1"))
    assert ov.issue_checklist("ov-torch") is None  # filed with OpenVINO, not with PyTorch
    assert get_backend("inductor").issue_checklist("inductor-default") is not None

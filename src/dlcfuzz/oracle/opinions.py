"""A second opinion on a numeric finding: independent evaluators of the reduced graph, each compared with
our NumPy reference and with the compiler's outputs.

When a configuration disagrees with our reference, either the compiler or the reference is wrong. An
evaluator written by other people (onnx's `ReferenceEvaluator`, an unoptimized runtime, the framework run
eagerly) that agrees with the compiler and not with the reference points at our reference: the finding is
then a *suspected reference error*, counted apart and treated as dlcfuzz's bug until shown otherwise.

This module only classifies outputs it is given (and holds the ONNX reference evaluator, an interpreter):
an oracle never runs a compiler. The evaluators a configuration has are its backend's facts
(`Backend.independent_evaluators`); they run in a sandboxed worker of their own (`exec/opinions.py`), once
per distinct finding, on its reduced graph and inputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.numeric import compare

# what an opinion says (stored strings: never rename)
AGREES_REFERENCE = "reference"
AGREES_COMPILER = "compiler"
AGREES_NEITHER = "neither"
NO_OPINION = "none"

# what the opinions say together (the split `bench/false_positives.py`, `dlcfuzz list` and the report count)
CONFIRMED = "reference confirmed"
SUSPECTED = "suspected reference error"
UNDECIDED = "no opinion"

# the categories where a configuration is compared with our reference (a metamorphic finding compares a
# mutant with its seed: no reference is involved)
REFERENCE_JUDGED = (C.WRONG_RESULT, C.INCONSISTENCY)
OPINION_TIMEOUT_S = 60.0  # the evaluators' worker, all evaluators together (most take well under a second)
OPINION_MAX_ELEMENTS = 1 << 22  # inputs larger than this (elements, all together) get no opinion: seconds at most


@dataclass(frozen=True)
class Evaluator:
    """An independent evaluator of a graph: `run(graph, inputs) -> outputs`; `config`: the name of a
    configuration of the compiler that is this evaluator (where the finding's test compared it, its outputs
    are read from that observation rather than computed again); `same_kernels`: that configuration is the
    compiler itself under other options (ONNXRuntime unoptimized), so where it departs from the reference too it
    is part of the finding (a kernel both builds share), not an opinion; eager torch or JAX is another
    implementation, whose agreement with the compiler against the reference does point at the reference."""

    name: str
    run: Callable[[Graph, dict[str, np.ndarray]], list[np.ndarray]]
    config: str = ""
    same_kernels: bool = False


@dataclass(frozen=True)
class Opinion:
    evaluator: str
    verdict: str  # AGREES_REFERENCE | AGREES_COMPILER | AGREES_NEITHER | NO_OPINION
    reason: str = ""  # why no opinion, or how it differs

    def line(self) -> str:
        said = {AGREES_REFERENCE: "agrees with the reference", AGREES_COMPILER: "agrees with the compiler",
                AGREES_NEITHER: "agrees with neither", NO_OPINION: "no opinion"}[self.verdict]
        return f"{self.evaluator}: {said}" + (f" ({self.reason})" if self.reason else "")


@dataclass
class SecondOpinion:
    """The opinions on one finding: `config` is the configuration that departs from the reference."""

    config: str
    opinions: list[Opinion] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """CONFIRMED when some evaluator agrees with the reference and none with the compiler; SUSPECTED when
        some agrees with the compiler and none with the reference; UNDECIDED otherwise."""
        said = {o.verdict for o in self.opinions}
        if AGREES_REFERENCE in said and AGREES_COMPILER not in said:
            return CONFIRMED
        if AGREES_COMPILER in said and AGREES_REFERENCE not in said:
            return SUSPECTED
        return UNDECIDED

    @property
    def suspected_reference_error(self) -> bool:
        return self.summary == SUSPECTED

    def text(self) -> str:
        """The lines detail.txt and the issue show."""
        head = {CONFIRMED: "independent evaluators agree with the reference",
                SUSPECTED: "SUSPECTED REFERENCE ERROR: independent evaluators agree with the compiler, not with "
                           "dlcfuzz's reference (dlcfuzz's bug until shown otherwise: do not file it upstream)",
                UNDECIDED: "no independent evaluator decides between the reference and the compiler"}[self.summary]
        return "\n".join([f"Second opinion on {self.config}: {head}.", *(f"- {o.line()}" for o in self.opinions)])

    def to_json(self) -> str:
        return json.dumps({"config": self.config, "opinions": [[o.evaluator, o.verdict, o.reason]
                                                                for o in self.opinions]})

    @staticmethod
    def from_json(text: str | None) -> SecondOpinion | None:
        if not text:
            return None
        d = json.loads(text)
        return SecondOpinion(d["config"], [Opinion(*o) for o in d["opinions"]])


def summary_of(row: dict[str, Any]) -> str:
    """A stored finding's split (a finding without a second opinion: UNDECIDED)."""
    s = SecondOpinion.from_json(row.get("opinions"))
    return UNDECIDED if s is None else s.summary


def _as(outputs: list[np.ndarray], like: list[np.ndarray]) -> list[np.ndarray]:
    """An evaluator's outputs in the reference's dtypes where the shapes match: the question is the values,
    not which dtype an evaluator returns (eager frameworks widen or narrow some)."""
    out = []
    for o, r in zip(outputs, like):
        o = np.asarray(o)
        out.append(o.astype(r.dtype) if o.shape == r.shape and o.dtype != r.dtype else o)
    return out + [np.asarray(o) for o in outputs[len(like):]]


def classify(evaluator: str, outputs: list[np.ndarray], reference: list[np.ndarray],
             compiler: list[np.ndarray]) -> Opinion:
    """What `outputs` say: equal (within the dtype's tolerance) to the reference, to the compiler, to
    neither (with the first difference from the reference), or to both (no opinion: they do not decide)."""
    outputs = _as(outputs, reference)
    off_ref, off_compiler = compare(outputs, reference), compare(outputs, compiler)
    if not off_ref and not off_compiler:
        return Opinion(evaluator, NO_OPINION, "equal to both within the tolerance")
    if not off_ref:
        return Opinion(evaluator, AGREES_REFERENCE)
    if not off_compiler:
        return Opinion(evaluator, AGREES_COMPILER)
    return Opinion(evaluator, AGREES_NEITHER, f"output {off_ref[0].index}: {off_ref[0].detail}"[:200])


def onnx_reference_outputs(g: Graph, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """`onnx.reference.ReferenceEvaluator` on the graph's ONNX lowering (raises where the graph does not
    lower to ONNX or the evaluator lacks an operator or dtype)."""
    from onnx.reference import ReferenceEvaluator

    from dlcfuzz.lower.onnx import to_onnx

    model = to_onnx(g)
    feeds = {v.name: np.asarray(inputs[v.name]) for v in g.inputs}
    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


ONNX_REFERENCE = Evaluator("onnx.reference.ReferenceEvaluator", onnx_reference_outputs)

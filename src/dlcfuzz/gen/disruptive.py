"""Disruptive mode (HirGen): graphs that break exactly one type or shape rule on purpose.

A small valid prefix graph is grown with the coverage-guided generator; then one operator node
is added whose inputs break one rule of its spec:
  dtype           an input dtype the operator does not accept (all inputs of its type constraint);
  dtype-mismatch  two inputs that must share a dtype get different ones;
  rank            input 0 has a rank the operator does not accept;
  shape           a later input's shape is incompatible (broadcast, inner dimension, ...);
  attribute       an attribute value the spec forbids, where the operator declares one (OpSpec.broken_attrs: a
                  window of size 0), its inputs kept.
The break is confirmed twice: our spec's infer() raises a TypeRuleError, and ONNX's own strict
shape/type inference rejects the lowered model, so a compiler that accepts the graph accepts
something the ONNX standard calls invalid. The broken node's output is declared without a type
(compilers infer it; a wrong guess must not be what gets the model rejected).
Coverage of disruptive mode is (operator, broken rule, dtype).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlcfuzz.errors import TypeRuleError
from dlcfuzz.gen.coverage import DISRUPTIVE, Coverage
from dlcfuzz.gen.hirgen import generate_guided
from dlcfuzz.gen.inputs import sample_inputs, sample_tensor
from dlcfuzz.gen.random import random_shape
from dlcfuzz.gen.sizes import SizeProfile, graph_work
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import DTYPES, TensorType
from dlcfuzz.ops import ANY, OpSpec
from dlcfuzz.ops.base import element_limit

RULES = ("dtype", "dtype-mismatch", "rank", "shape", "attribute")
MAX_RANK = 5
TRIES = 60
PREFIXES = 4  # valid prefixes tried in turn: with few rules (a backend's disruptive_rules) one prefix's values may
# offer no operator a breakable input (1 in 200 OpenVINO tests raised, an internal error of the campaign)


@dataclass
class Broken:
    """What a disruptive graph breaks: recorded in the test case for the oracle and the report."""

    op: str
    rule: str
    dtype: str
    node: str
    output: str
    why: str  # our spec's error message
    legal: list[tuple[str, list[int]]] | None = None  # the broken node's input types with the rule kept (its twin)
    legal_attrs: dict[str, Any] | None = None  # the attribute rule: the attributes kept (its twin's); else None

    @property
    def item(self) -> str:
        return f"{DISRUPTIVE}|{self.op}|{self.rule}|{self.dtype}"

    def to_json(self) -> dict[str, str]:
        return dict(self.__dict__)


def _other(rng: np.random.Generator, options: Sequence[str]) -> str | None:
    return options[int(rng.integers(len(options)))] if options else None


def perturb(rng: np.random.Generator, spec: OpSpec, rule: str, ins: list[TensorType]) -> list[TensorType] | None:
    """The input types with `rule` broken, or None when the rule cannot be broken for this op."""
    if not ins:  # an operator without tensor inputs (ConstantOfShape) has no typing rule to break
        return None
    out = list(ins)
    d0 = ins[0].dtype
    if rule == "dtype":
        bad = _other(rng, [d for d in DTYPES if d not in spec.dtypes])
        if bad is None:
            return None
        return [t.with_dtype(bad) if t.dtype == d0 else t for t in ins]
    if rule == "dtype-mismatch":
        same = [k for k in range(1, len(ins)) if ins[k].dtype == d0]
        if not same:
            return None
        k = same[int(rng.integers(len(same)))]
        other = _other(rng, [d for d in spec.dtypes if d != d0 and d in DTYPES]) or _other(rng, [d for d in DTYPES if d != d0])
        out[k] = ins[k].with_dtype(other)  # type: ignore[arg-type]
        return out
    if rule == "rank":
        ranks = [r for r in range(MAX_RANK + 1) if r not in spec.ranks and abs(r - ins[0].rank) <= 2]
        if not ranks:
            return None
        r = ranks[int(rng.integers(len(ranks)))]
        shape = tuple(ins[0].shape[:r]) + random_shape(rng, max(0, r - ins[0].rank))
        out[0] = TensorType(d0, shape)
        return out
    if rule == "shape":
        ks = [k for k in range(len(ins)) if ins[k].rank > 0 and (k > 0 or len(ins) > 1)]
        if not ks:
            return None
        k = ks[int(rng.integers(len(ks)))]
        shape = list(ins[k].shape)
        i = int(rng.integers(len(shape)))
        shape[i] = int(_other(rng, [s for s in range(2, 8) if s != shape[i]]))  # type: ignore[arg-type]
        out[k] = TensorType(ins[k].dtype, tuple(shape))
        return out
    raise ValueError(f"unknown rule {rule!r}")


def schema_allows_input_types(model: Any) -> bool:
    """The witness `model` is one default-domain ONNX node whose every input type lies in its schema's
    type constraint (False where there is no such schema, e.g. com.microsoft, or several nodes)."""
    import onnx

    nodes = list(model.graph.node)
    if len(nodes) != 1 or nodes[0].domain not in ("", "ai.onnx"):
        return False
    node = nodes[0]
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    try:
        schema = onnx.defs.get_schema(node.op_type, version) if version else onnx.defs.get_schema(node.op_type)
    except onnx.defs.SchemaError:
        return False
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    declared = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    declared.update({t.name: t.data_type for t in model.graph.initializer})
    formals = list(schema.inputs)
    for k, name in enumerate(node.input):
        formal = formals[min(k, len(formals) - 1)] if formals else None
        if not name or formal is None or formal.type_str not in allowed or name not in declared:
            continue
        if f"tensor({onnx.TensorProto.DataType.Name(declared[name]).lower()})" not in allowed[formal.type_str]:
            return False
    return True


def onnx_rejects(g: Graph, untyped: Sequence[str], rule: str = "") -> bool:
    """ONNX's strict type and shape inference rejects the broken node (the independent witness), fed
    its inputs' declared types. The node alone, because ONNX's inference checks nothing of a graph
    holding a node of a domain it has no schema for (com.microsoft), whatever the broken node is.
    A dtype break also needs the schema's type constraint to exclude the dtype: ONNX's inference of a
    function body can fail for a type the schema allows (MeanVarianceNormalization on float16: its
    float epsilon constant), and a compiler that runs such a model is right."""
    import onnx

    from dlcfuzz.lower.onnx import to_onnx

    node = g.producers()[untyped[0]]
    types = g.types()
    used = list(dict.fromkeys(n for n in node.inputs if n))
    witness = Graph([Value(n, types[n]) for n in used if n not in g.constants],
                    {n: g.constants[n] for n in used if n in g.constants}, [node], [untyped[0]])
    try:
        model = to_onnx(witness, untyped_outputs=untyped)
    except Exception:  # noqa: BLE001 - a break our ONNX lowering cannot express is not tested
        return False
    if rule == "dtype" and schema_allows_input_types(model):
        return False
    try:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception:  # noqa: BLE001 - onnx raises several types (InferenceError, ValidationError, ...)
        return True
    return False


def generate_disruptive(
    rng: np.random.Generator,
    coverage: Coverage,
    choices: Sequence[tuple[OpSpec, list[str]]],
    *,
    rules: Sequence[str] = RULES,
    prefix_ops: int = 3,
    sizes: SizeProfile | None = None,
) -> tuple[Graph, dict[str, np.ndarray], Broken]:
    """(graph, inputs, what it breaks). Prefers (operator, rule, dtype) triples not yet covered. `sizes`: a long-axis
    test's profile (gen/sizes.draw_sizes), which the valid prefix is generated with and the broken node's fresh input
    and its legal form (the twin's node) keep within; None: small shapes. A new prefix is drawn where one admits no
    break (PREFIXES)."""
    for _ in range(PREFIXES):
        made = _break_after_prefix(rng, coverage, choices, rules, prefix_ops, sizes)
        if made is not None:
            return made
    raise ValueError("could not break a rule of any allowed operator")


def _break_after_prefix(rng: np.random.Generator, coverage: Coverage, choices: Sequence[tuple[OpSpec, list[str]]],
                        rules: Sequence[str], prefix_ops: int,
                        sizes: SizeProfile | None) -> tuple[Graph, dict[str, np.ndarray], Broken] | None:
    """One valid prefix and a node that breaks one of `rules` after it, or None where TRIES draws broke none."""
    prefix = generate_guided(rng, prefix_ops, coverage, choices, sizes=sizes)
    inputs = sample_inputs(prefix, rng)
    fallback = None
    for attempt in range(TRIES):
        spec, ds = choices[int(rng.integers(len(choices)))]
        rule = rules[int(rng.integers(len(rules)))]
        fits = [v for n in prefix.nodes for v in n.outputs if v.type.dtype in ds and v.type.rank in spec.ranks]
        first_v = fits[int(rng.integers(len(fits)))] if fits and rng.random() < 0.8 else None
        if first_v:
            first = first_v.type
        else:
            dtype = ds[int(rng.integers(len(ds)))]
            shape = random_shape(rng, int(spec.ranks[int(rng.integers(len(spec.ranks)))]))
            first = TensorType(dtype, shape if sizes is None else sizes.lengthen(shape))
        try:
            if sizes is None:
                ins, attrs = spec.sample(rng, first)
            else:  # the operator may sample tensors as large as the test's own (as GraphBuilder.propose)
                with element_limit(sizes.max_elements):
                    ins, attrs = spec.sample(rng, first)
            outs = spec.infer(ins, attrs)
        except TypeRuleError:
            continue
        if sizes is not None and not sizes.admits(graph_work(prefix) + spec.work(ins, outs), (*ins, *outs)):
            continue
        kept = attrs
        if rule == "attribute":
            broken_attrs = spec.broken_attrs(rng, ins, attrs)
            bad, attrs = (None, attrs) if broken_attrs is None else (list(ins), broken_attrs)
        else:
            bad = perturb(rng, spec, rule, list(ins))
        if bad is None:
            continue
        try:
            spec.infer(bad, attrs)
            continue  # our spec accepts it: nothing is broken
        except TypeRuleError as e:
            why = str(e)
        g = prefix.copy()
        feed = dict(inputs)
        names = []
        for k, t in enumerate(bad):
            if k == 0 and first_v is not None and t == first_v.type:
                names.append(first_v.name)
                continue
            try:
                dom = spec.domain(k, ins, kept) if t.dtype == ins[k].dtype else ANY
            except Exception:  # noqa: BLE001 - a domain rule may not apply to broken types
                dom = ANY
            name = g.fresh_name("bad")
            if dom.strict:
                g.constants[name] = sample_tensor(rng, t, dom)
            else:
                g.inputs.append(Value(name, t))
                feed[name] = sample_tensor(rng, t, dom)
            names.append(name)
        out_t = outs[0].with_dtype(bad[0].dtype) if rule == "dtype" and outs[0].dtype == ins[0].dtype else outs[0]
        out_name = g.fresh_name("broken")
        extra = [Value(f"{out_name}_{i}", t) for i, t in enumerate(outs[1:], 1)]
        node = Node(spec.name, names, [Value(out_name, out_t), *extra], attrs, name=g.fresh_name("n_broken"))
        g.nodes.append(node)
        g.outputs = [out_name]
        dtype = bad[0].dtype if rule == "dtype" else ins[0].dtype if ins else outs[0].dtype  # a window: its output's
        broken = Broken(spec.name, rule, dtype, node.name, out_name, why, [(t.dtype, list(t.shape)) for t in ins],
                        kept if rule == "attribute" else None)
        if not onnx_rejects(g, [v.name for v in node.outputs], rule):
            continue
        if broken.item not in coverage or attempt >= TRIES // 2:
            return g, feed, broken
        fallback = fallback or (g, feed, broken)
    return fallback


def legal_twin(g: Graph, inputs: dict[str, np.ndarray], broken: dict[str, Any], seed: int
               ) -> tuple[Graph, dict[str, np.ndarray]]:
    """The test's legal twin: the same graph with the broken node's rule kept, every input of the node whose
    type breaks it, or that was made for the broken node alone, replaced by a constant of the legal type (sampled
    in the operator's domain, seeded), its attributes the legal ones where the attribute rule broke one, its
    outputs typed by the spec, and graph inputs nothing reads any more dropped. A compiler that rejects the
    twin too rejected the graph for another reason than the broken rule. Raises KeyError for a test made
    before twins were recorded (no `legal` types)."""
    from dlcfuzz.ops import check_graph, get_op

    legal = [TensorType(dt, tuple(shape)) for dt, shape in broken["legal"]]
    rng = np.random.default_rng(seed)
    twin = g.copy()
    node = next(n for n in twin.nodes if n.name == broken["node"])
    spec = get_op(node.op)
    types = twin.types()
    names = list(node.inputs)
    # read elsewhere: a value of the valid graph, kept where its type is legal; an input or constant made for the
    # broken node alone is sampled again, in the legal node's domain (its values were drawn for the broken form,
    # edge profiles included: class indices out of range, say)
    shared = {i for n in twin.nodes if n is not node for i in n.inputs} | set(twin.outputs)
    produced = {v.name for n in twin.nodes for v in n.outputs}
    for k, t in enumerate(legal):
        if types[names[k]] != t or (names[k] not in shared and names[k] not in produced):
            names[k] = twin.fresh_name("legal")
            twin.constants[names[k]] = sample_tensor(rng, t, spec.domain(k, legal, node.attrs))
    attrs = broken.get("legal_attrs") or node.attrs
    outs = spec.infer(legal, attrs)
    twin.nodes[twin.nodes.index(node)] = Node(node.op, names, [Value(v.name, t) for v, t in zip(node.outputs, outs)],
                                             attrs, name=node.name)
    read = {i for n in twin.nodes for i in n.inputs} | set(twin.outputs)
    twin.inputs = [v for v in twin.inputs if v.name in read]
    check_graph(twin)
    return twin, {v.name: inputs[v.name] for v in twin.inputs}

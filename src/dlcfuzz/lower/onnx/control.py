"""Regions (ops/regions.py) as ONNX If, Loop and Scan with subgraph attributes, and their import.

A body's captures become names of the enclosing scope inside the subgraph (ONNX captures by name);
importing does the reverse: the names a subgraph reads from outside become the node's trailing inputs
and the body's trailing parameters, and outside constants are copied into the body."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import Unsupported
from dlcfuzz.ir.graph import Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.onnx.common import expect_attrs, onnx_attr, onnx_elem_type
from dlcfuzz.lower.registry import target
from dlcfuzz.ops.base import Attrs
from dlcfuzz.ops.regions import INT64_MAX, RegionSpec

if TYPE_CHECKING:
    from dlcfuzz.lower.onnx_import import ImportContext

ONNX = target("onnx")
IMPORT = target("onnx-import")


@ONNX.register("if")
def lower_if(spec: RegionSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
             out_types: Any) -> None:
    captured = ins[1:]
    b.node("If", ins[:1], outs, then_branch=b.subgraph(attrs["then_branch"], "then", 0, captured),
           else_branch=b.subgraph(attrs["else_branch"], "else", 0, captured))


@ONNX.register("loop")
def lower_loop(spec: RegionSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    n = int(attrs["num_carried"])
    b.node("Loop", ins[:2 + n], outs, body=b.subgraph(attrs["body"], "loop", 2 + n, ins[2 + n:]))


@ONNX.register("scan")
def lower_scan(spec: RegionSpec, b: Any, ins: list[str], outs: list[str], attrs: Attrs, in_types: Any,
               out_types: Any) -> None:
    k = spec.leading(attrs)
    b.node("Scan", ins[:k], outs, body=b.subgraph(attrs["body"], "scan", k, ins[k:]),
           num_scan_inputs=int(attrs["num_scan_inputs"]), scan_input_axes=list(attrs["scan_input_axes"]),
           scan_input_directions=list(attrs["scan_input_directions"]),
           scan_output_axes=list(attrs["scan_output_axes"]) or None,  # an empty list has no ONNX type
           scan_output_directions=list(attrs["scan_output_directions"]) or None)


# ---- import -------------------------------------------------------------------------------------

def free_names(graph: Any) -> list[str]:
    """The names an onnx.GraphProto (its nested subgraphs included) reads from the enclosing scope, in
    order of first use."""
    import onnx

    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    free: list[str] = []
    for node in graph.node:
        reads = list(node.input)
        for a in node.attribute:
            subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
            for sub in subs:
                reads.extend(free_names(sub))
        free.extend(r for r in reads if r not in defined and r not in free)
        defined.update(node.output)
    free.extend(o.name for o in graph.output if o.name not in defined and o.name not in free)
    return free


def _import_body(graph: Any, formal: list[TensorType], ctx: ImportContext) -> tuple[Graph, list[str]]:
    """The body of a region (a Graph with its formal parameters first, then its captures) and the
    outside names it captures."""
    import onnx

    from dlcfuzz.lower.onnx_import import import_model

    def tensor_value_info(name: str, dtype: str, shape: tuple[int, ...]) -> Any:
        return onnx.helper.make_tensor_value_info(name, onnx_elem_type(dtype), shape)

    if len(graph.input) != len(formal):
        raise Unsupported(f"a subgraph with {len(graph.input)} inputs where {len(formal)} are bound")
    free = free_names(graph)
    captured = [f for f in free if f not in ctx.constants]
    inits = [onnx.numpy_helper.from_array(np.asarray(ctx.constants[f]), f) for f in free if f in ctx.constants]
    inputs = [tensor_value_info(p.name, t.dtype, t.shape) for p, t in zip(graph.input, formal)]
    inputs += [tensor_value_info(f, ctx.type_of(f).dtype, ctx.type_of(f).shape) for f in captured]
    sub = onnx.helper.make_graph(list(graph.node), graph.name or "body", inputs,
                                 [onnx.helper.make_empty_tensor_value_info(o.name) for o in graph.output],
                                 initializer=inits)
    model = onnx.helper.make_model(sub, opset_imports=[onnx.helper.make_opsetid("", ctx.opset)])
    res = import_model(model)
    if not res.complete or res.graph is None:
        s = res.skipped[0]
        raise Unsupported(f"in its subgraph: {s.op_type}: {s.reason}")
    body = res.graph
    if len(body.outputs) != len(graph.output):
        raise Unsupported("a subgraph output was not produced")
    body.name = graph.name or "body"
    return body, captured


@IMPORT.register("if")
def import_if(spec: RegionSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    import onnx

    expect_attrs(node, {"then_branch", "else_branch"})
    branches = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
    then, then_caps = _import_body(branches["then_branch"], [], ctx)
    other, other_caps = _import_body(branches["else_branch"], [], ctx)
    captured = list(dict.fromkeys(then_caps + other_caps))
    attrs = {"then_branch": _with_params(then, then_caps, captured, ctx),
             "else_branch": _with_params(other, other_caps, captured, ctx)}
    return [node.input[0], *captured], attrs


def _with_params(body: Graph, caps: list[str], captured: list[str], ctx: ImportContext) -> Graph:
    """`body` (whose parameters capture `caps`) taking the parameters of all of `captured`, in that order:
    a branch that does not read a capture of the other one takes it unused."""
    from dlcfuzz.ir.graph import Value

    by_name = dict(zip(caps, body.inputs[len(body.inputs) - len(caps):]))
    lead = body.inputs[:len(body.inputs) - len(caps)]
    params = []
    for c in captured:
        params.append(by_name.get(c) or Value(_unused_name(body, len(params)), ctx.type_of(c)))
    body.inputs = [*lead, *params]
    return body


def _unused_name(body: Graph, k: int) -> str:
    taken = set(body.types())
    name = f"unused{k}"
    while name in taken:
        name += "_"
    return name


@IMPORT.register("loop")
def import_loop(spec: RegionSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:

    expect_attrs(node, {"body"})
    graph = onnx_attr(node, "body")
    carried = [i for i in node.input[2:]]
    if "" in carried:
        raise Unsupported("Loop: an absent carried value")
    n = len(carried)
    formal = [TensorType("int64", ()), TensorType("bool", ()), *(ctx.type_of(c) for c in carried)]
    body, captured = _import_body(graph, formal, ctx)
    ins = [_or_constant(node, 0, ctx, np.array(INT64_MAX, dtype=np.int64)),
           _or_constant(node, 1, ctx, np.array(True)), *carried]
    attrs: Attrs = {"body": body, "num_carried": n}
    if len(body.outputs) > 1 + n:  # scan outputs: their leading length is the trip count, which must be known
        trips = ctx.const_input(node, 0)
        if trips is None:
            raise Unsupported("Loop: scan outputs of a loop whose trip count is not a constant (a data-dependent "
                              "extent with no bound to read: our loop's max_trips)")
        attrs["trips"] = int(np.asarray(trips).reshape(-1)[0])
    return [*ins, *captured], attrs


def _or_constant(node: Any, i: int, ctx: ImportContext, value: np.ndarray) -> str:
    """Input i's name, or, where ONNX leaves it out, a constant that means the same."""
    if ctx.has_input(node, i):
        return str(node.input[i])
    name = f"__{node.name or node.op_type}_absent{i}"
    ctx.constants[name] = value
    ctx.types[name] = TensorType.of(value)
    return name


@IMPORT.register("scan")
def import_scan(spec: RegionSpec, node: Any, ctx: ImportContext) -> tuple[list[str], Attrs]:
    expect_attrs(node, {"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions",
                        "scan_output_axes", "scan_output_directions"})
    if ctx.opset < 9:
        raise Unsupported("Scan before opset 9 (a batch axis and sequence lengths)")
    graph = onnx_attr(node, "body")
    m = int(onnx_attr(node, "num_scan_inputs"))
    n = len(node.input) - m
    k = len(graph.output) - n
    axes = list(onnx_attr(node, "scan_input_axes", [0] * m))
    ins = list(node.input)
    formal = [ctx.type_of(s) for s in ins[:n]]
    for name, ax in zip(ins[n:], axes):
        t = ctx.type_of(name)
        a = ax % max(t.rank, 1)
        formal.append(t.with_shape(t.shape[:a] + t.shape[a + 1:]))
    body, captured = _import_body(graph, formal, ctx)
    attrs: Attrs = {"body": body, "num_states": n, "num_scan_inputs": m, "scan_input_axes": axes,
                    "scan_input_directions": list(onnx_attr(node, "scan_input_directions", [0] * m)),
                    "scan_output_axes": list(onnx_attr(node, "scan_output_axes", [0] * k)),
                    "scan_output_directions": list(onnx_attr(node, "scan_output_directions", [0] * k))}
    return [*ins, *captured], attrs

"""Graph -> ONNX model. Sub-functions are inlined (ONNX functions are not what compilers optimize).

Each operator's ONNX lowering (and its ONNX import, target "onnx-import") is a rule registered
against its name in this package's family modules (elementwise.py, nn.py, shape.py, reduce.py,
quant.py); `lower/onnx_import.py` is the importer that uses the import rules."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from dlcfuzz.ir.graph import CALL_OP, Graph
from dlcfuzz.ir.types import TensorType
from dlcfuzz.lower.onnx.common import onnx_elem_type
from dlcfuzz.lower.registry import target

OPSET = 18
IR_VERSION = 8  # accepted by every onnxruntime and TVM frontend we pin; raised only when a newer opset needs it


# Lowering runs once per test, and onnx.helper's generic builders (a type dispatch per attribute and
# per dimension) made lowering ~15% slower than these, which build the same protos for the values
# dlcfuzz writes (tests/test_lowering_registry.py checks them against onnx.helper's); anything else
# goes to onnx.helper.
def tensor_value_info(name: str, dtype: str, dims: tuple[int, ...], unknown: tuple[int, ...] = ()) -> Any:
    """onnx.helper.make_tensor_value_info(name, onnx_elem_type(dtype), dims) for a static shape; the axes in `unknown`
    (data-dependent extents, TensorType.unknown) become symbolic dimensions of their own (`<name>_d<axis>`)."""
    import onnx

    info = onnx.ValueInfoProto(name=name)
    tensor = info.type.tensor_type
    tensor.elem_type = onnx_elem_type(dtype)
    tensor.shape.SetInParent()  # an empty shape (a scalar) is present, not absent
    dim_list = tensor.shape.dim
    for axis, d in enumerate(dims):
        if axis in unknown:
            dim_list.add(dim_param=f"{name}_d{axis}")
        else:
            dim_list.add(dim_value=d)
    return info


def attribute(key: str, value: Any) -> Any:
    """onnx.helper.make_attribute(key, value)."""
    import onnx

    kind = type(value)
    if kind is int or kind is bool:
        return onnx.AttributeProto(name=key, i=int(value), type=onnx.AttributeProto.INT)
    if kind is float:
        return onnx.AttributeProto(name=key, f=value, type=onnx.AttributeProto.FLOAT)
    if kind is str:
        return onnx.AttributeProto(name=key, s=value.encode(), type=onnx.AttributeProto.STRING)
    if (kind is list or kind is tuple) and value:
        kinds = {type(v) for v in value}
        if kinds <= {int, bool}:
            return onnx.AttributeProto(name=key, ints=[int(v) for v in value], type=onnx.AttributeProto.INTS)
        if kinds == {float}:
            return onnx.AttributeProto(name=key, floats=value, type=onnx.AttributeProto.FLOATS)
    return onnx.helper.make_attribute(key, value)


def make_node(op_type: str, inputs: list[str], outputs: list[str], name: str | None = None,
              domain: str | None = None, **attrs: Any) -> Any:
    """onnx.helper.make_node(op_type, inputs, outputs, name=name, domain=domain, **attrs)."""
    import onnx

    node = onnx.NodeProto(op_type=op_type, input=inputs, output=outputs)
    if name:
        node.name = name
    if domain is not None:
        node.domain = domain
    if attrs:
        node.attribute.extend(attribute(k, v) for k, v in sorted(attrs.items()) if v is not None)
    return node


class OnnxBuilder:
    """What an operator's ONNX rule writes into: nodes, initializers, fresh names."""

    def __init__(self, prefix: str = "", functions: dict[str, Graph] | None = None) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._prefix = prefix
        self._count = 0
        self.opset = OPSET  # raised by rules of operators newer than OPSET (need_opset)
        self.functions = functions or {}  # the graph's sub-functions, which calls inside region bodies inline

    def subgraph(self, body: Graph, hint: str, n_formal: int, captured: list[str]) -> Any:
        """The onnx.GraphProto of a region body (an If branch, a Loop or Scan body): its first `n_formal`
        parameters become the subgraph's inputs, the others read the enclosing scope's `captured` names
        (ONNX subgraphs capture by name). Every name it defines is unique in the model (this builder's
        fresh prefix); its constants and the rules' helper constants are Constant nodes inside it."""
        import onnx

        sub = OnnxBuilder(prefix=f"{self.tmp(hint)}/", functions=self.functions)
        rename = {p.name: f"{sub._prefix}{p.name}" for p in body.inputs[:n_formal]}
        rename.update({p.name: outer for p, outer in zip(body.inputs[n_formal:], captured, strict=True)})
        for k, a in body.constants.items():
            rename[k] = f"{sub._prefix}{k}"
            sub.initializers.append(onnx.numpy_helper.from_array(np.asarray(a), rename[k]))
        rename.update({v.name: f"{sub._prefix}{v.name}" for n in body.nodes for v in n.outputs})
        env = _lower_nodes(sub, body, rename, self.functions, sub._prefix)
        self.opset = max(self.opset, sub.opset)
        nodes = [make_node("Constant", [], [t.name], value=t) for t in sub.initializers] + sub.nodes
        out_names = _distinct_outputs(nodes, body, rename, sub._prefix)
        return onnx.helper.make_graph(
            nodes, sub._prefix.rstrip("/"),
            [tensor_value_info(rename[p.name], p.type.dtype, p.type.shape) for p in body.inputs[:n_formal]],
            [tensor_value_info(name, env[o].dtype, env[o].shape, env[o].unknown)
             for name, o in zip(out_names, body.outputs)],
        )

    def need_opset(self, version: int) -> None:
        """The model must import the standard domain at least at `version` (an operator added after
        OPSET, e.g. Attention at 23). Operators written in their opset-18 form stay valid there: every
        later change to them added attributes or types."""
        self.opset = max(self.opset, version)

    def tmp(self, hint: str = "t") -> str:
        self._count += 1
        return f"{self._prefix}_{hint}{self._count}"

    def node(self, op_type: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any) -> None:
        self.nodes.append(make_node(op_type, inputs, outputs, name=self.tmp(op_type), domain=domain or None, **attrs))

    def const(self, array: np.ndarray | list | int | float, dtype: str | None = None, hint: str = "c") -> str:
        import onnx

        arr = np.asarray(array, dtype=dtype) if dtype else np.asarray(array)
        name = self.tmp(hint)
        self.initializers.append(onnx.numpy_helper.from_array(arr, name))
        return name


def _lower_nodes(b: OnnxBuilder, g: Graph, rename: dict[str, str], functions: dict[str, Graph],
                 path: str) -> dict[str, TensorType]:
    """Write `g`'s nodes into `b`; returns `g`'s value types (for its caller's signature)."""
    from dlcfuzz.ops import get_op

    env = g.types()
    rules = target("onnx")
    for idx, n in enumerate(g.nodes):
        ins = [rename.get(i, i) for i in n.inputs]
        if n.op == CALL_OP:
            f = functions[n.attrs["callee"]]
            sub = f"{path}{n.attrs['callee']}.{idx}/"
            inner = {p.name: a for p, a in zip(f.inputs, ins)}
            for k, a in f.constants.items():
                inner[k] = b.const(a, hint=f"{sub}{k}")
            for m in f.nodes:
                for v in m.outputs:
                    inner[v.name] = f"{sub}{v.name}"
            _lower_nodes(b, f, inner, functions, sub)
            for v, o in zip(n.outputs, f.outputs):
                b.node("Identity", [inner[o]], [rename.get(v.name, v.name)])
            continue
        outs = [rename.get(v.name, v.name) for v in n.outputs]
        rules.rule(n.op)(get_op(n.op), b, ins, outs, n.attrs, [env[i] for i in n.inputs], [v.type for v in n.outputs])
    return env


def _distinct_outputs(nodes: list[Any], g: Graph, rename: dict[str, str], prefix: str) -> list[str]:
    """The ONNX names of `g`'s outputs: an output that is also an input or constant, or listed twice,
    needs its own name in ONNX (an Identity appended to `nodes`)."""
    out_names: list[str] = []
    graph_inputs = {v.name for v in g.inputs} | set(g.constants)
    for i, o in enumerate(g.outputs):
        name = rename.get(o, o)
        if o in graph_inputs or name in out_names:
            alias = f"{prefix}{o}__out{i}"
            nodes.append(make_node("Identity", [name], [alias]))
            out_names.append(alias)
        else:
            out_names.append(name)
    return out_names


def to_onnx(g: Graph, opset: int = OPSET, untyped_outputs: Collection[str] = ()) -> Any:
    """Return an onnx.ModelProto computing `g`. Outputs in `untyped_outputs` are declared without
    a type (disruptive graphs: the compiler infers it, a guessed type must not be what it rejects)."""
    import onnx

    b = OnnxBuilder(functions=g.functions)
    rename: dict[str, str] = {}
    for k, a in g.constants.items():
        b.initializers.append(onnx.numpy_helper.from_array(np.asarray(a), k))
    env = _lower_nodes(b, g, rename, g.functions, "")
    nodes = b.nodes
    out_names = _distinct_outputs(nodes, g, rename, "")
    graph = onnx.helper.make_graph(
        nodes,
        g.name,
        [tensor_value_info(v.name, v.type.dtype, v.type.shape) for v in g.inputs],
        [
            onnx.helper.make_empty_tensor_value_info(name) if o in untyped_outputs
            else tensor_value_info(name, env[o].dtype, env[o].shape, env[o].unknown)
            for name, o in zip(out_names, g.outputs)
        ],
        initializer=b.initializers,
    )
    domains = sorted({n.domain for n in nodes if n.domain})  # ORT's contrib operators (com.microsoft)
    standard = onnx.helper.make_opsetid("", max(opset, b.opset))
    model = onnx.helper.make_model(
        graph, opset_imports=[standard, *(onnx.helper.make_opsetid(d, 1) for d in domains)],
        producer_name="dlcfuzz"
    )
    model.ir_version = max(IR_VERSION, onnx.helper.find_min_ir_version_for([standard], ignore_unknown=True))
    return model


def onnx_output_names(model: Any) -> list[str]:
    return [o.name for o in model.graph.output]


def inferred_types(model: Any) -> dict[str, TensorType]:
    """ONNX's own shape inference (strict, with data propagation) as our TensorTypes."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    out: dict[str, TensorType] = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
        if -1 in dims:
            continue
        dtype = str(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
        out[vi.name] = TensorType(dtype, tuple(dims))
    return out


# the rules register themselves on import (after the names above, which they use)
from dlcfuzz.lower.onnx import (  # noqa: E402, F401
    attention,
    contrib,
    control,
    data_shape,
    elementwise,
    indexing,
    linalg,
    loss,
    meta,
    nn,
    normalization,
    ordering,
    quant,
    quant_integer,
    recurrent,
    reduce,
    reduce_lp,
    shape,
    spatial,
    spectral,
)

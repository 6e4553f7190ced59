"""One-operator graphs: the unit of operator tests and capability probing."""

from __future__ import annotations

import numpy as np

from dlcfuzz.gen.inputs import sample_tensor
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import OpSpec


def single_op_graph(spec: OpSpec, rng: np.random.Generator, first: TensorType) -> Graph:
    """A graph with one `spec` node whose input 0 has type `first`.

    Inputs with a strict domain (indices) become sampled constants; the rest are graph inputs.
    Raises ShapeError/DTypeError when `first` does not fit the operator.
    """
    in_types, attrs = spec.sample(rng, first)
    g = Graph()
    names = []
    for k, t in enumerate(in_types):
        d = spec.domain(k, in_types, attrs)
        name = f"x{k}"
        if d.strict:
            g.constants[name] = sample_tensor(rng, t, d)
        else:
            g.inputs.append(Value(name, t))
        names.append(name)
    outs = spec.infer(in_types, attrs)
    g.nodes.append(Node(spec.name, names, [Value(f"y{i}", t) for i, t in enumerate(outs)], attrs, name="n0"))
    g.outputs = [f"y{i}" for i in range(len(outs))]
    return g

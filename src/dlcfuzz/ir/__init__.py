"""The framework-neutral program representation."""

from dlcfuzz.ir.graph import CALL_OP, Attrs, Graph, Node, Value
from dlcfuzz.ir.printer import to_text
from dlcfuzz.ir.serialize import dumps, graphs_equal, load, loads, save
from dlcfuzz.ir.types import DTYPES, FLOATS, INTS, NUMERIC, SIGNED, SIGNED_INTS, TensorType

__all__ = [
    "CALL_OP", "DTYPES", "FLOATS", "INTS", "NUMERIC", "SIGNED", "SIGNED_INTS",
    "Attrs", "Graph", "Node", "TensorType", "Value",
    "dumps", "graphs_equal", "load", "loads", "save", "to_text",
]

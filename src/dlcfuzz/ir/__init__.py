"""The framework-neutral program representation."""

from dlcfuzz.ir.graph import CALL_OP, Attrs, Graph, Node, Value
from dlcfuzz.ir.printer import to_text
from dlcfuzz.ir.serialize import dumps, graphs_equal, load, loads, save
from dlcfuzz.ir.types import (
    ALL_DTYPES,
    DTYPES,
    FLOATS,
    INTS,
    NUMERIC,
    SIGNED,
    SIGNED_INTS,
    UNSIGNED,
    WIDE_UNSIGNED,
    TensorType,
)

__all__ = [
    "ALL_DTYPES", "CALL_OP", "DTYPES", "FLOATS", "INTS", "NUMERIC", "SIGNED", "SIGNED_INTS", "UNSIGNED",
    "WIDE_UNSIGNED",
    "Attrs", "Graph", "Node", "TensorType", "Value",
    "dumps", "graphs_equal", "load", "loads", "save", "to_text",
]

"""HirGen's coverage of the generated high-level IR, kept across a whole campaign.

Three criteria (Ma et al., ISSTA 2023): operator x dtype, operator x output shape, and
operator -> operator edges (plus operator paths of length 3); and ours, operator x attribute x
value class (a mode's name, the sign of an axis, an empty list), so that guidance reaches the
attribute space and not only the operator space. Items are short strings so that the store can
persist them as they are; `kind(item)` is the criterion an item belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dlcfuzz.ir.graph import CALL_OP, Graph, Node
from dlcfuzz.ir.types import TensorType

KINDS = ("op-dtype", "op-shape", "edge", "path3", "op-attr")
DISRUPTIVE = "broken-rule"  # (operator, broken rule, dtype) of disruptive mode


def shape_text(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def value_class(v: Any) -> str:
    """A coarse class of an attribute value: what distinguishes code paths, not the value itself."""
    if v is None:
        return "absent"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, str):
        return v[:24]  # modes and equations: the name is the class
    if isinstance(v, int):
        return "neg" if v < 0 else "zero" if v == 0 else "one" if v == 1 else "large" if v >= 1 << 31 else "pos"
    if isinstance(v, float):
        return "nonfinite" if v != v or v in (float("inf"), float("-inf")) else "neg" if v < 0 else \
            "zero" if v == 0 else "pos"
    if isinstance(v, (list, tuple)):
        if not v:
            return "empty"
        signs = "".join(sorted({value_class(x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)}))
        return f"len{min(len(v), 4)}{'-' + signs if signs else ''}"
    return type(v).__name__


def attr_items(op: str, attrs: Mapping[str, Any]) -> list[str]:
    return [f"op-attr|{op}|{k}|{value_class(v)}" for k, v in sorted(attrs.items())]


def node_items(op: str, dtype: str, outs: Sequence[TensorType], upstream: Sequence[tuple[str, Sequence[str]]],
               attrs: Mapping[str, Any] | None = None) -> list[str]:
    """Items an operator node covers. `upstream` holds, per input computed by an operator, that
    operator and the operators feeding it (for paths of length 3)."""
    items = [f"op-dtype|{op}|{dtype}", *attr_items(op, attrs or {})]
    items += [f"op-shape|{op}|{shape_text(t.shape)}" for t in outs[:1]]
    for prev, before in upstream:
        items.append(f"edge|{prev}|{op}")
        items += [f"path3|{b}|{prev}|{op}" for b in before]
    return items


def graph_items(g: Graph) -> set[str]:
    """Every item a graph covers (sub-function bodies included; calls are transparent)."""
    items: set[str] = set()
    for f in [g, *g.functions.values()]:
        env = f.types()
        producer: dict[str, Node] = {v.name: n for n in f.nodes for v in n.outputs if n.op != CALL_OP}
        for n in f.nodes:
            if n.op == CALL_OP:
                continue
            upstream = []
            for i in dict.fromkeys(n.inputs):
                p = producer.get(i)
                if p is not None:
                    upstream.append((p.op, sorted({producer[j].op for j in p.inputs if j in producer})))
            dtype = env[n.inputs[0]].dtype if n.inputs else n.outputs[0].type.dtype
            items.update(node_items(n.op, dtype, [v.type for v in n.outputs], upstream, n.attrs))
    return items


def kind(item: str) -> str:
    return item.split("|", 1)[0]


def is_compiler_item(item: str) -> bool:
    """An item measured inside the compiler (e.g. `_inductor/scheduler.py:120->121`), not one of the graph's."""
    return "|" not in item


class Coverage:
    """A set of covered items with per-criterion counts."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        self.items: set[str] = set(items)

    def gain(self, items: Iterable[str]) -> int:
        return sum(1 for i in set(items) if i not in self.items)

    def add(self, items: Iterable[str]) -> list[str]:
        """Add items; return the ones that were new (what the store persists)."""
        new = [i for i in dict.fromkeys(items) if i not in self.items]
        self.items.update(new)
        return new

    def counts(self) -> dict[str, int]:
        c = dict.fromkeys((*KINDS, DISRUPTIVE), 0)
        for i in self.items:
            k = kind(i)
            c[k] = c.get(k, 0) + 1
        return c

    def __contains__(self, item: str) -> bool:
        return item in self.items

    def __len__(self) -> int:
        return len(self.items)

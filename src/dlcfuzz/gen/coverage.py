"""HirGen's coverage of the generated high-level IR, kept across a whole campaign.

Three criteria (Ma et al., ISSTA 2023): operator x dtype, operator x output shape, and
operator -> operator edges (plus operator paths of length 3); and ours, operator x attribute x
value class (a mode's name, the sign of an axis, an empty list), so that guidance reaches the
attribute space and not only the operator space, and control flow: region kind x nesting depth x
the dtypes it carries (issue 40; the nodes of region bodies count as the main graph's do). Items are short strings so that the store can
persist them as they are; `kind(item)` is the criterion an item belongs to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from dlcfuzz.gen.regions import COMPUTED_TRIPS, bodies_in
from dlcfuzz.ir.graph import CALL_OP, Graph, Node
from dlcfuzz.ir.types import TensorType

KINDS = ("op-dtype", "op-shape", "edge", "path3", "op-attr", "region")
DISRUPTIVE = "broken-rule"  # (operator, broken rule, dtype) of disruptive mode
COMPILER = "compiler"  # lines/arcs measured inside the compiler while it compiled and ran a test


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
        # the classes of its distinct numbers, by type and value (an int 1 is "one", a float 1.0 "pos"): a long list
        # (a Compress condition, ScatterElements' indices) holds few
        numbers = {(type(x), x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)}
        signs = "".join(sorted({value_class(x) for _, x in numbers}))
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


def carried_types(n: Node) -> list[TensorType]:
    """What a region node carries from its bodies out: a conditional's outputs, a loop's carried values, a scan's
    states (ops/regions.py)."""
    count = {"loop": "num_carried", "scan": "num_states"}.get(n.op)
    outs = n.outputs if count is None else n.outputs[:int(n.attrs.get(count, 0))]
    return [v.type for v in outs]


def region_items(g: Graph, depth: int = 1) -> set[str]:
    """The control-flow items of the regions in `g` (nested ones included, at their depth): region kind x nesting
    depth x the dtypes it carries; a loop whose trip count is computed from data (`max_trips`) is a kind of its own,
    COMPUTED_TRIPS."""
    items: set[str] = set()
    for n in g.nodes:
        bodies = n.bodies()
        if not bodies:
            continue
        dtypes = ",".join(sorted({t.dtype for t in carried_types(n)})) or "none"
        kind = COMPUTED_TRIPS if "max_trips" in n.attrs else n.op
        items.add(f"region|{kind}|depth{depth}|{dtypes}")
        for body in bodies.values():
            items |= region_items(body, depth + 1)
    return items


def graph_items(g: Graph) -> set[str]:
    """Every item a graph covers (sub-function and region bodies included; calls are transparent)."""
    items: set[str] = region_items(g)
    for f in [s for top in [g, *g.functions.values()] for s in (top, *bodies_in(top))]:
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
    """The criterion of an item; every item measured inside the compiler is of one kind, COMPILER
    (counted per line, the counts would keep a string per line covered)."""
    return item.split("|", 1)[0] if "|" in item else COMPILER


def is_compiler_item(item: str) -> bool:
    """An item measured inside the compiler (e.g. `_inductor/scheduler.py:120->121`), not one of the graph's."""
    return "|" not in item


class Coverage:
    """The items a campaign has covered, with per-criterion counts.

    Held as 64-bit hashes of the items (a sorted array, plus a set of the latest ones merged into it
    in bulk): 8 bytes an item, where a set of the strings took ~100. A campaign covers new items for
    as long as it runs (a 30-minute ONNXRuntime campaign: ~400,000, mostly operator x output shape
    and operator paths), and as strings they were the driver's steady memory growth (~3-4 MB/min).
    The strings themselves are the store's (it persists each test's new items). Python's string
    hash is per process, so nothing here is persisted; two items with one hash (odds about 1e-8
    at a million items) would make the second look covered, nothing worse.
    """

    RECENT_MAX = 1 << 15  # hashes kept in a set before they are merged into the sorted array

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._merged = np.empty(0, np.int64)
        self._recent: set[int] = set()
        self._counts: dict[str, int] = dict.fromkeys((*KINDS, DISRUPTIVE), 0)
        self._size = 0
        self.add(items)

    def _unseen(self, items: Sequence[str]) -> list[bool]:
        """Per item: not covered yet (duplicates within `items` are judged alike)."""
        hashes = [hash(i) for i in items]
        merged = self._merged
        if len(merged) and hashes:
            h = np.fromiter(hashes, np.int64, len(hashes))
            old = (merged[np.minimum(merged.searchsorted(h), len(merged) - 1)] == h).tolist()
        else:
            old = [False] * len(hashes)
        recent = self._recent
        return [not o and x not in recent for x, o in zip(hashes, old)]

    def unseen(self, items: Sequence[str]) -> list[str]:
        """The items not covered yet, in order (duplicates kept)."""
        return [i for i, u in zip(items, self._unseen(items)) if u]

    def gain(self, items: Iterable[str]) -> int:
        return sum(self._unseen(list(set(items))))

    def add(self, items: Iterable[str]) -> list[str]:
        """Add items; return the ones that were new (what the store persists)."""
        new = self.unseen(list(dict.fromkeys(items)))
        for i in new:
            self._recent.add(hash(i))
            k = kind(i)
            self._counts[k] = self._counts.get(k, 0) + 1
        self._size += len(new)
        if len(self._recent) >= self.RECENT_MAX:
            recent = np.fromiter(self._recent, np.int64, len(self._recent))
            self._merged = np.union1d(self._merged, recent)
            self._recent = set()
        return new

    def counts(self) -> dict[str, int]:
        return dict(self._counts)

    def __contains__(self, item: str) -> bool:
        return not self._unseen([item])[0]

    def __len__(self) -> int:
        return self._size

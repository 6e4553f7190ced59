"""Regions: structured control flow whose bodies are graphs held in the node's attributes (ONNX's If,
Loop and Scan semantics).

A body is closed (`ir/graph.py`): the values it reads from the enclosing scope are the node's
trailing inputs, its *captures*, bound in order to the body's trailing parameters. Per operator:

- `if`: inputs `[cond, *captures]` (cond: a one-element bool); attributes `then_branch` and
  `else_branch`, each with the captures as its parameters and the same output types, which are the
  node's.
- `loop`: inputs `[trip_count, cond, *carried, *captures]` (a one-element int64 and bool; ONNX's
  absent trip count is INT64_MAX, an absent condition true); attributes `body` and `num_carried`, and,
  where the body has scan outputs, one of `trips` (the number of trips the loop runs: the scan outputs'
  leading length is static, a loop that runs another number of trips is refused by the reference) and
  `max_trips` (a trip count computed from data: the scan outputs' leading axis is a data-dependent
  extent, `TensorType.unknown`, bounded by `max_trips`; a loop that runs more trips is refused by the
  reference). The body's parameters `[iteration (int64 scalar), cond (bool scalar),
  *carried, *captures]`, its outputs `[cond, *carried, *scan slices]`; the node's outputs
  `[*carried, *scan outputs]`, each scan output its slices stacked on a new leading axis. A
  carried value keeps its type through the trips.
- `scan`: inputs `[*states, *scan inputs, *captures]`; attributes `body`, `num_states`,
  `num_scan_inputs`, `scan_input_axes`, `scan_input_directions`, `scan_output_axes`,
  `scan_output_directions` (all four lists always present). The body's parameters `[*states, *one
  slice of each scan input (its axis removed), *captures]`, its outputs `[*states, *scan slices]`;
  the node's outputs `[*final states, *scan outputs]` (slices stacked on the output axis).

Region operators are not in `registry()` (which generation and the capability probe draw from):
they are built around generated subgraphs (`gen/regions.py`) or imported; `get_op` finds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from dlcfuzz.errors import DTypeError, ShapeError
from dlcfuzz.ir.graph import Graph
from dlcfuzz.ir.types import DTYPES, TensorType
from dlcfuzz.ops.base import Attrs, Domain, OpSpec

# the most trips a loop may run in the reference (ONNX's absent trip count is INT64_MAX: a loop whose
# condition never turns false would not end)
MAX_TRIPS = 100_000
INT64_MAX = 2 ** 63 - 1
TRIP_COUNT = Domain(strict=True)  # a loop's trip count: kept as its builder chose it (LoopSpec.domain)


def _types(vs: Sequence) -> list[TensorType]:
    return [v.type for v in vs]


def _one_element(spec: OpSpec, t: TensorType, dtype: str, what: str) -> None:
    if t.dtype != dtype or t.size != 1:
        raise DTypeError(f"{spec.name}: {what} must be a one-element {dtype} tensor, not {t}")


def _body(spec: OpSpec, attrs: Attrs, name: str) -> Graph:
    body = attrs.get(name)
    if not isinstance(body, Graph):
        raise ShapeError(f"{spec.name}: attribute {name!r} must be a graph")
    return body


def _params(spec: OpSpec, body: Graph, name: str, expected: Sequence[TensorType]) -> None:
    got = _types(body.inputs)
    if got != list(expected):
        raise ShapeError(f"{spec.name}: {name}'s parameters {list(map(str, got))} are not "
                         f"{list(map(str, expected))}")


class RegionSpec(OpSpec):
    """What the region operators share: the bodies' names, the number of leading (non-capture) inputs."""

    family = "control"
    n_inputs = -1
    n_outputs = -1
    dtypes = DTYPES
    body_attrs: ClassVar[tuple[str, ...]] = ()

    def leading(self, attrs: Attrs) -> int:
        """How many of the node's inputs come before its captures."""
        raise NotImplementedError

    def captures(self, inputs: Sequence[str], attrs: Attrs) -> list[str]:
        return list(inputs[self.leading(attrs):])

    def bound_inputs(self, inputs: Sequence[str], attrs: Attrs) -> dict[str, list[str | None]]:
        """Per body, the node input each of its parameters starts from (None: the region's own value, a
        loop's iteration number): what a value's consumers inside a body ask of it reaches that input."""
        return {a: list(inputs) for a in self.body_attrs}

    def sample(self, rng, first):  # type: ignore[no-untyped-def]
        raise ShapeError(f"{self.name}: a region is built around a subgraph (gen/regions.py), not sampled")

    def reference(self, xs, attrs):  # type: ignore[no-untyped-def]
        raise NotImplementedError(f"{self.name}: the reference interpreter runs region bodies (reference.run)")


class IfSpec(RegionSpec):
    name = "if"
    onnx_ops = ("If",)
    body_attrs = ("then_branch", "else_branch")

    def leading(self, attrs: Attrs) -> int:
        return 1

    def bound_inputs(self, inputs: Sequence[str], attrs: Attrs) -> dict[str, list[str | None]]:
        return {a: list(inputs[1:]) for a in self.body_attrs}

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        if not ins:
            raise ShapeError("if: needs a condition")
        _one_element(self, ins[0], "bool", "the condition")
        then, other = _body(self, attrs, "then_branch"), _body(self, attrs, "else_branch")
        _params(self, then, "then_branch", ins[1:])
        _params(self, other, "else_branch", ins[1:])
        outs = then.output_types()
        if other.output_types() != outs:
            raise ShapeError(f"if: the branches' output types differ: {list(map(str, outs))} and "
                             f"{list(map(str, other.output_types()))}")
        return outs


class LoopSpec(RegionSpec):
    name = "loop"
    onnx_ops = ("Loop",)
    body_attrs = ("body",)

    def leading(self, attrs: Attrs) -> int:
        return 2 + int(attrs.get("num_carried", 0))

    def bound_inputs(self, inputs: Sequence[str], attrs: Attrs) -> dict[str, list[str | None]]:
        return {"body": [None, *inputs[1:]]}

    def domain(self, index: int, ins: Sequence[TensorType], attrs: Attrs) -> Domain:
        """The trip count is the loop's structure, not data: strict and unbounded, so edge values leave it as
        built (gen/inputs.profile_tensor). An edge trip count (2**62) would make the reference run MAX_TRIPS
        trips per evaluation and the compiler loop until the test's timeout."""
        return TRIP_COUNT if index == 0 else super().domain(index, ins, attrs)

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        n = int(attrs.get("num_carried", -1))
        if n < 0 or len(ins) < 2 + n:
            raise ShapeError(f"loop: {len(ins)} inputs for {n} carried values")
        _one_element(self, ins[0], "int64", "the trip count")
        _one_element(self, ins[1], "bool", "the condition")
        body = _body(self, attrs, "body")
        carried = list(ins[2:2 + n])
        _params(self, body, "body", [TensorType("int64", ()), TensorType("bool", ()), *carried, *ins[2 + n:]])
        outs = body.output_types()
        if len(outs) < 1 + n:
            raise ShapeError(f"loop: the body has {len(outs)} outputs for a condition and {n} carried values")
        _one_element(self, outs[0], "bool", "the body's condition")
        if outs[1:1 + n] != carried:
            raise ShapeError(f"loop: carried values change type: {list(map(str, carried))} -> "
                             f"{list(map(str, outs[1:1 + n]))}")
        slices = outs[1 + n:]
        if any(t.unknown for t in slices):
            raise ShapeError("loop: a scan output's slice has a data-dependent extent (a body's signature is static)")
        bounded = "max_trips" in attrs
        if bounded and "trips" in attrs:
            raise ShapeError("loop: 'trips' (a static count) and 'max_trips' (a computed one's bound) exclude each other")
        count = attrs.get("max_trips" if bounded else "trips")
        if slices and not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
            raise ShapeError("loop: scan outputs need a static number of trips (attribute 'trips') or the bound of a "
                             "computed one (attribute 'max_trips'), a non-negative int")
        if not slices:
            return carried
        if bounded:  # a computed trip count: the stacked axis is a data-dependent extent of at most max_trips
            return carried + [TensorType(t.dtype, (count, *t.shape), (0,)) for t in slices]
        return carried + [t.with_shape((count, *t.shape)) for t in slices]


def _norm(axis: int, rank: int, spec: OpSpec) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"{spec.name}: axis {axis} out of range for rank {rank}")
    return axis % rank


class ScanSpec(RegionSpec):
    name = "scan"
    onnx_ops = ("Scan",)
    body_attrs = ("body",)

    def leading(self, attrs: Attrs) -> int:
        return int(attrs.get("num_states", 0)) + int(attrs.get("num_scan_inputs", 0))

    def infer(self, ins: Sequence[TensorType], attrs: Attrs) -> list[TensorType]:
        n, m = int(attrs.get("num_states", -1)), int(attrs.get("num_scan_inputs", 0))
        if n < 0 or m < 1 or len(ins) < n + m:
            raise ShapeError(f"scan: {len(ins)} inputs for {n} states and {m} scan inputs")
        in_axes = list(attrs.get("scan_input_axes", [0] * m))
        in_dirs = list(attrs.get("scan_input_directions", [0] * m))
        if len(in_axes) != m or len(in_dirs) != m:
            raise ShapeError("scan: one axis and direction per scan input")
        states, scanned = list(ins[:n]), list(ins[n:n + m])
        slices, lengths = [], set()
        for t, ax in zip(scanned, in_axes):
            if t.rank < 1:
                raise ShapeError("scan: a scan input has an axis to scan")
            a = _norm(ax, t.rank, self)
            lengths.add(t.shape[a])
            slices.append(t.with_shape(t.shape[:a] + t.shape[a + 1:]))
        if len(lengths) != 1:
            raise ShapeError(f"scan: scan inputs of different lengths {sorted(lengths)}")
        trips = lengths.pop()
        body = _body(self, attrs, "body")
        _params(self, body, "body", [*states, *slices, *ins[n + m:]])
        outs = body.output_types()
        if outs[:n] != states:
            raise ShapeError(f"scan: states change type: {list(map(str, states))} -> {list(map(str, outs[:n]))}")
        produced = outs[n:]
        out_axes = list(attrs.get("scan_output_axes", [0] * len(produced)))
        out_dirs = list(attrs.get("scan_output_directions", [0] * len(produced)))
        if len(out_axes) != len(produced) or len(out_dirs) != len(produced):
            raise ShapeError("scan: one axis and direction per scan output")
        result = list(states)
        for t, ax in zip(produced, out_axes):
            a = _norm(ax, t.rank + 1, self)
            result.append(t.with_shape(t.shape[:a] + (trips,) + t.shape[a:]))
        return result


REGION_OPS: dict[str, RegionSpec] = {s.name: s for s in (IfSpec(), LoopSpec(), ScanSpec())}


def is_region(op: str) -> bool:
    return op in REGION_OPS

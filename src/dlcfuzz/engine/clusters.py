"""Root-cause clusters above signatures.

A signature identifies one reduced finding exactly; several signatures are often one upstream bug
(the same optimization mis-evaluates float16 under different neighbours, one importer check fails
on many operators). Findings are grouped by what their reduced forms share:

- error-like findings (crash, hang, unexpected error, rejection, ...): category, compiler, the
  minimal optimization/pass set when the key has one, and the error message normalized without
  names, numbers and paths;
- numeric findings (wrong result, inconsistency, ...): category, compiler, the configurations or
  minimal optimization/pass set, the dtype class of the reduced graph and its operator set.

Two findings whose facts give the same cluster key are one cluster. Facts come from the store row
(category, key, configs, detail) and the finding folder's `reduced.json` when it exists (a programs finding's
`program.json`; the `ops=` part of the key otherwise).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import clustered_by_ops, message_key_tags
from dlcfuzz.oracle.signature import message_class
from dlcfuzz.programs.core import Program, walk

DTYPE_CLASSES = {
    "float16": "half", "bfloat16": "half", "float32": "float", "float64": "float",
    "int8": "int", "int16": "int", "int32": "int", "int64": "int",
    "uint8": "int", "uint16": "int", "uint32": "int", "uint64": "int", "bool": "bool",
}

_OPTS = re.compile(r"\|(opts|passes)=([^|]*)")
_OPS = re.compile(r"\|ops=([^|]*)")
# a numeric key's reason: `wrong|compiler|configs|REASON|ops=...`, `inconsistency|compiler|a|b|REASON|ops=...`
_REASON = re.compile(r"\|(shape|dtype|nan|inf|value)\|")
_SHAPES = re.compile(r"shape \(([^()]*)\) != \(([^()]*)\)")
_DTYPES = re.compile(r"dtype (\w+) != (\w+)")


@dataclass(frozen=True)
class FindingFacts:
    """What a finding's reduced form says about its root cause."""

    id: int
    compiler: str
    category: str
    configs: tuple[str, ...]
    opts: str  # the minimal optimization/pass set ("" when the finding has none)
    ops: frozenset[str]
    dtypes: frozenset[str]
    message: str  # normalized, without names and numbers
    key: str = ""
    reason: str = ""  # of a numeric finding: shape, dtype, nan, inf or value
    # the reduced graph's nodes with their attributes, one `op{name=value, ...}` a line (names sorted; a region's
    # body nodes too, not its body attributes): what a register entry names where one operator has two bugs that
    # differ only in its attributes (LpPool's SAME padding with dilations, its ceil_mode); a programs finding's
    # statements likewise (a spliced replacement pattern's `search`: the function it calls, which names the pattern)
    attrs: str = ""

    @property
    def dtype_class(self) -> str:
        return "+".join(sorted({DTYPE_CLASSES.get(d, d) for d in self.dtypes})) or "?"

    @property
    def numeric(self) -> bool:
        # judged by comparing numbers (or times): the reduced graph's operators are the root cause's best proxy
        return clustered_by_ops(self.category)

    def cluster_key(self) -> tuple[str, ...]:
        where = self.opts or ",".join(sorted(self.configs))
        if self.category == C.WRONG_RESULT:
            # every configuration the test ran disagreed with the reference: which ones it ran is the
            # campaign's sampling, not the bug (a kernel bug shows under any sampled configuration set)
            where = self.known_opts or "every-config"
        if self.numeric and self.reason in ("shape", "dtype") and self.message:
            # a wrong shape or dtype is named by its pattern (rank 1 for rank 0, int64 for int32), whichever
            # operator produced it
            return ("numeric", self.compiler, self.category, where, self.reason, self.message)
        if self.numeric:
            return ("numeric", self.compiler, self.category, where, self.dtype_class, ",".join(sorted(self.ops)))
        # error-like: the message names the bug; the operators around it are incidental
        return ("error", self.compiler, self.category, self.known_opts, self.message)

    @property
    def known_opts(self) -> str:
        """The minimal optimization set, "" when the reduction could not tell ("opts=none")."""
        return "" if self.opts.endswith("=none") else self.opts

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "compiler": self.compiler, "category": self.category, "configs": list(self.configs),
                "opts": self.opts, "ops": sorted(self.ops), "dtypes": sorted(self.dtypes), "message": self.message,
                "key": self.key, "reason": self.reason, "attrs": self.attrs}

    @staticmethod
    def from_json(d: dict[str, Any]) -> FindingFacts:
        return FindingFacts(int(d["id"]), d["compiler"], d["category"], tuple(d["configs"]), d.get("opts", ""),
                            frozenset(d["ops"]), frozenset(d["dtypes"]), d["message"], d.get("key", ""), d.get("reason", ""),
                            d.get("attrs", ""))


@dataclass
class Cluster:
    """Findings that share a root cause, the first (lowest id) is its representative."""

    number: int
    key: tuple[str, ...]
    members: list[FindingFacts] = field(default_factory=list)

    @property
    def first(self) -> FindingFacts:
        return self.members[0]

    def describe(self) -> str:
        f = self.first
        where = f.opts or ",".join(f.configs)
        if f.numeric:
            what = f"ops {','.join(sorted(f.ops)) or '?'} ({f.dtype_class})"
        else:
            what = (f.message[:90] or "(no message)")
        return f"{f.category} in {f.compiler} [{where}]: {what}"


def _key_message(key: str) -> str:
    """The normalized message part of an error key (`error|compiler|Type|message|frames`)."""
    parts = key.split("|")
    return message_class(parts[3]) if len(parts) > 3 and parts[0] in message_key_tags() else ""


def _reduced_nodes(folder: Path | None) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The finding's reduced graph, read from `reduced.json`, and its nodes: main's, its functions', and those of
    region bodies (If branches, Loop bodies) in walk order; a programs finding's reduced program (`program.json`,
    `_program_nodes`) where there is no graph; None without either."""
    if folder is None:
        return None
    try:
        d = json.loads((folder / "reduced.json").read_text())
    except (OSError, ValueError):
        return _program_nodes(folder)
    nodes: list[dict[str, Any]] = []

    def walk(ns: Iterable[dict[str, Any]]) -> None:
        for n in ns:
            nodes.append(n)
            for body in _bodies(n.get("attrs") or {}):
                walk(body.get("nodes", []))

    walk(d.get("nodes", []))
    for fn in (d.get("functions") or {}).values():
        walk(fn.get("nodes", []) if isinstance(fn, dict) else [])
    return d, nodes


def _program_nodes(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """A programs finding's reduced program (`program.json`) in a reduced graph's form: its inputs, and its
    statements (those of region bodies too, in walk order) as nodes, each with its op, its attributes (a spliced
    pattern's name the function it calls: an `attrs` entry tells patterns apart) and the dtypes of the values it
    defines. The strategy stores the dtypes beside the program (`dtypes`: its dialect's typing); a finding written
    without them has its inputs' dtypes alone. None without a readable program."""
    try:
        d = json.loads((folder / "program.json").read_text())
        program = Program.from_json(d)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    dtypes = {**{i.name: i.dtype for i in program.inputs}, **(d.get("dtypes") or {})}
    graph = {"inputs": [{"name": i.name, "dtype": i.dtype} for i in program.inputs]}
    nodes = [{"op": s.op, "attrs": s.attrs, "outputs": [{"dtype": dtypes[v]} for v in s.defines() if v in dtypes]}
             for s in walk(program.stmts)]
    return graph, nodes


def _graph_facts(reduced: tuple[dict[str, Any], list[dict[str, Any]]]) -> tuple[frozenset[str], frozenset[str]]:
    """(operators, dtypes) of a reduced graph (`_reduced_nodes`)."""
    d, nodes = reduced
    dtypes = {i["dtype"] for i in d.get("inputs", []) if "dtype" in i}
    dtypes.update(o["dtype"] for n in nodes for o in n.get("outputs", []) if "dtype" in o)
    return frozenset(n["op"] for n in nodes), frozenset(dtypes)


def _graph_attrs(nodes: list[dict[str, Any]]) -> str:
    """A reduced graph's nodes with their attributes (FindingFacts.attrs), a region's body attributes left out."""
    lines = []
    for n in nodes:
        attrs = n.get("attrs") or {}
        lines.append(f"{n['op']}{{{', '.join(f'{k}={attrs[k]}' for k in sorted(attrs) if not _bodies(attrs[k]))}}}")
    return "\n".join(lines)


def _bodies(attrs: Any) -> list[dict[str, Any]]:
    """The region bodies (an If's branches, a Loop's body) among a node's serialized attributes: their operators
    are the graph's as much as the region node's (Graph.ops_used counts them, so a numeric key's `ops=` does), and
    a register entry names the operator inside a branch, not the `if` around it."""
    if isinstance(attrs, dict):
        if set(attrs) == {"graph"} and isinstance(attrs["graph"], dict):
            return [attrs["graph"]]
        return [b for v in attrs.values() for b in _bodies(v)]
    if isinstance(attrs, list):
        return [b for v in attrs for b in _bodies(v)]
    return []


def finding_folder(run: Path, row: dict[str, Any]) -> Path:
    return run / "findings" / f"{int(row['id']):04d}-{row['category']}"


def mismatch_class(detail: str) -> str:
    """A numeric finding's shape or dtype mismatch as a pattern: `rank 1 != rank 0`, `float32 != float16`."""
    m = _SHAPES.search(detail or "")
    if m:
        ranks = [len([d for d in g.split(",") if d.strip()]) for g in m.groups()]
        return f"rank {ranks[0]} != rank {ranks[1]}"
    m = _DTYPES.search(detail or "")
    return f"{m.group(1)} != {m.group(2)}" if m else ""


def facts_of(row: dict[str, Any], folder: Path | None = None,
             graph: tuple[frozenset[str], frozenset[str]] | None = None) -> FindingFacts:
    """The facts of one store row of `findings` (with its folder, when written; or the reduced graph's
    (operators, dtypes) when known)."""
    key = row.get("key") or ""
    m = _OPTS.search(key)
    opts = f"{m.group(1)}={m.group(2)}" if m else ""
    reduced = _reduced_nodes(folder)
    graph = graph if graph is not None else (_graph_facts(reduced) if reduced is not None else None)
    if graph is not None:
        ops, dtypes = graph
    else:
        mo = _OPS.search(key)
        ops, dtypes = frozenset(x for x in (mo.group(1).split(",") if mo else []) if x), frozenset()
    configs = tuple(json.loads(row.get("configs") or "[]"))
    detail = row.get("detail") or ""
    numeric = clustered_by_ops(row.get("category") or "")
    mr = _REASON.search(key) if numeric else None
    reason = mr.group(1) if mr else ""
    if numeric:
        message = mismatch_class(detail) if reason in ("shape", "dtype") else ""
    else:
        message = message_class(detail) or _key_message(key)
    return FindingFacts(int(row["id"]), row.get("compiler") or "", row.get("category") or "", configs, opts,
                        frozenset(ops), frozenset(dtypes), message, key, reason,
                        _graph_attrs(reduced[1]) if reduced is not None else "")


def cluster(facts: Iterable[FindingFacts]) -> list[Cluster]:
    """Clusters in order of their first finding; members in id order.

    Findings with the same cluster key are one cluster. Then a numeric cluster whose operators strictly
    contain those of another numeric cluster of the same compiler, category and configurations (and whose
    dtype classes contain the other's) joins it: a graph that could not be reduced further holds the
    smaller reproducer's operators, so it most likely shows the same bug."""
    by_key: dict[tuple[str, ...], list[FindingFacts]] = {}
    for f in sorted(facts, key=lambda f: f.id):
        by_key.setdefault(f.cluster_key(), []).append(f)
    groups = list(by_key.values())
    by_size = sorted(range(len(groups)), key=lambda i: (len(groups[i][0].ops), groups[i][0].id))
    parent = list(range(len(groups)))
    for i in by_size:
        a = groups[i][0]
        if not a.numeric or a.reason in ("shape", "dtype"):
            continue
        where = (a.compiler, a.category, a.opts or ",".join(sorted(a.configs)))
        classes = set(a.dtype_class.split("+")) if a.dtypes else None  # None: unknown, any
        best = None
        for j in by_size:
            b = groups[j][0]
            if (j != i and b.numeric and b.reason not in ("shape", "dtype") and b.ops and b.ops < a.ops
                    and (b.compiler, b.category, b.opts or ",".join(sorted(b.configs))) == where
                    and (classes is None or set(b.dtype_class.split("+")) <= classes)
                    and (best is None or len(b.ops) > len(groups[best][0].ops))):
                best = j
        if best is not None:
            parent[i] = best
    for i, g in enumerate(groups):  # an error whose optimization set is unknown joins the one that is known
        a = g[0]
        if a.numeric or a.known_opts:
            continue
        same = [j for j, h in enumerate(groups) if j != i and not h[0].numeric and h[0].known_opts
                and (h[0].compiler, h[0].category, h[0].message) == (a.compiler, a.category, a.message)]
        if len(same) == 1:
            parent[i] = same[0]

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    merged: dict[int, list[FindingFacts]] = {}
    for i in range(len(groups)):
        merged.setdefault(root(i), []).extend(groups[i])
    out = sorted((sorted(ms, key=lambda f: f.id) for ms in merged.values()), key=lambda ms: ms[0].id)
    return [Cluster(n + 1, ms[0].cluster_key(), ms) for n, ms in enumerate(out)]


def run_clusters(run: Path, rows: list[dict[str, Any]]) -> list[Cluster]:
    """The clusters of a campaign's distinct findings (store rows), reading each finding's folder."""
    return cluster(facts_of(r, finding_folder(run, r)) for r in rows)


def pairwise_scores(assigned: dict[int, Any], labels: dict[int, str]) -> tuple[float, float]:
    """Pairwise precision and recall of a clustering against root-cause labels: a pair of findings
    put together is right when the labels agree; recall is the share of same-label pairs put together."""
    ids = sorted(set(assigned) & set(labels))
    together = right = same = 0
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            t, s = assigned[a] == assigned[b], labels[a] == labels[b]
            together += t
            same += s
            right += t and s
    precision = right / together if together else 1.0
    recall = right / same if same else 1.0
    return precision, recall

"""Pattern extraction from a compiler's own tests: (graph, optimization) pairs -> patterns.

Sources: a folder of ONNX models, one subfolder per optimization (e.g. ONNXRuntime's optimizer test
models), imported with the ONNX importer's partial mode (contrib-domain and unsupported nodes are
reported and cut out, never a crash); or a pytest run of Python tests whose TVM pass calls are
recorded by `dlcfuzz.backends.tvm.pytest_plugin` (every (input module, pass) pair, Relax binding blocks
converted to our IR).

Cutting follows the optimization's granularity: block-level optimizations (constant folding,
common-subexpression elimination, operator fusion, ...) see a whole block, so the whole imported
graph is one pattern; subgraph-level ones (a fusion rule) see a few connected operators, so each
connected component is a pattern, and one larger than `max_nodes` is cut into consecutive windows.
Holes are the values a cut reads but does not compute; its outputs are what it computes and
something outside it (or nobody) reads. Identical cuts are kept once.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from dlcfuzz.ir import loads
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ops import check_graph
from dlcfuzz.synth.pattern import Pattern

# Optimizations that work on a whole block (or the whole graph); the rest are subgraph-level.
BLOCK_LEVEL = frozenset({
    # ONNXRuntime
    "ConstantFolding", "CommonSubexpressionElimination", "ConstantSharing", "TransposeOptimizer",
    "TransposeOptimizer_CPUExecutionProvider", "NhwcTransformer", "NchwcTransformer", "PropagateCastOps",
    "CastFloat16Transformer", "FreeDimensionOverrideTransformer", "QDQPropagationTransformer",
    # TVM Relax
    "FoldConstant", "FuseOps", "FuseTIR", "EliminateCommonSubexpr", "DeadCodeElimination", "CombineParallelMatmul",
    "CanonicalizeBindings", "ConvertToDataflow", "ToNonDataflow", "TopologicalSort", "LegalizeOps",
    "AdjustMatmulOrder", "Normalize",
})
MAX_BLOCK_NODES = 48
# largest tensor of a kept pattern: 4x a generated graph's (ops.base.MAX_ELEMENTS), which keeps every
# optimization the ORT corpus has patterns for (4,096 would lose GeluFusionL1's only one)
MAX_PATTERN_ELEMENTS = 16_384


def optimization_name(compiler: str, folder: str) -> str | None:
    """The optimization a test folder names, as the compiler's switch knows it (None: a name of the
    test harness, or an optimizer that is off by default, which no campaign configuration runs)."""
    if compiler != "onnxruntime":
        return folder
    from dlcfuzz.backends.onnxruntime.optimizers import ORT_CONTAINERS, ort_optimizers

    folder = folder.removesuffix("_CPUExecutionProvider")
    if folder == "FreeDimensionOverrideTransformer":  # runs only with dimension overrides configured
        return None
    return folder if folder in (*ort_optimizers(), *ORT_CONTAINERS) else None


def granularity(optimization: str) -> str:
    return "block" if optimization in BLOCK_LEVEL else "subgraph"


@dataclass
class ExtractReport:
    sources: int = 0  # models read / pass calls recorded
    imported: int = 0  # sources from which at least one operator was imported
    unreadable: int = 0
    located: int = 0  # models whose optimized region ORT located (optimization-aware cuts)
    skipped: Counter = field(default_factory=Counter)  # (domain, op type) of nodes cut out
    per_optimization: Counter = field(default_factory=Counter)  # patterns per optimization
    dropped: Counter = field(default_factory=Counter)  # patterns left out, by reason
    untargeted: Counter = field(default_factory=Counter)  # test folders naming no optimization of the compiler
    provenance: dict = field(default_factory=dict)  # recorded in the pattern file (`save_patterns(source=)`)

    def summary(self) -> str:
        lines = [f"sources {self.sources}, imported {self.imported}, unreadable {self.unreadable}, "
                 f"rewritten region located {self.located}, "
                 f"patterns {sum(self.per_optimization.values())} for {len(self.per_optimization)} optimizations"]
        if self.skipped:
            top = ", ".join(f"{d + ':' if d else ''}{t} x{n}" for (d, t), n in self.skipped.most_common(12))
            lines.append(f"nodes skipped (unsupported or contrib domain): {sum(self.skipped.values())} ({top})")
        if self.dropped:
            why = ", ".join(f"{r} x{n}" for r, n in self.dropped.most_common())
            lines.append(f"patterns left out: {sum(self.dropped.values())} ({why})")
        if self.untargeted:
            lines.append("folders naming no optimization of the compiler: "
                         + ", ".join(f"{t} x{n}" for t, n in self.untargeted.most_common()))
        return "\n".join(lines)


def keep_usable(patterns: list[Pattern], compiler: str, report: ExtractReport) -> list[Pattern]:
    """The patterns synthesis can use, each as it uses them (index constants repaired); the rest
    counted in `report.dropped`: a pattern targeting no optimization of `compiler` (synthesis
    prefers targeted ones, so it would never be chosen), one with a tensor of more than
    MAX_PATTERN_ELEMENTS elements (tests keep tensors small: such weights made most of the bytes of
    the ORT corpus's patterns, such activations most of the reference's time on TVM's), one that is no valid graph even after repair (`usable_pattern`)."""
    from dlcfuzz.synth.synthesize import usable_pattern

    kept = []
    for p in patterns:
        if not p.targets.get(compiler):
            report.dropped["targets no optimization"] += 1
            report.untargeted[str(p.meta.get("tested_by") or p.source)] += 1
            continue
        if any(t.size > MAX_PATTERN_ELEMENTS for t in p.graph.types().values()):
            report.dropped[f"a tensor of more than {MAX_PATTERN_ELEMENTS} elements"] += 1
            continue
        fixed, why = usable_pattern(p)
        if fixed is None:
            report.dropped[f"invalid ({why.split(':')[0]})"] += 1
            continue
        kept.append(fixed)
    return kept


def _provenance(kind: str, corpus: str, compiler: str, folders: list[str], args: list[str]) -> dict:
    """Where a pattern file came from: corpus name (never a path of this machine), the test folders
    (optimizations) read, the command that regenerates it, the date, the importer's version."""
    import datetime

    import onnx

    return {"corpus": corpus, "kind": kind, "compiler": compiler, "folders": folders,
            "command": " ".join(["dlcfuzz", "patterns", "extract", *args]),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"), "onnx": onnx.__version__}


def cut(g: Graph, node_ids: list[int]) -> Graph | None:
    """The sub-graph of nodes `node_ids` (topological order kept) with holes and outputs."""
    nodes = [g.nodes[i] for i in sorted(node_ids)]
    types = g.types()
    inside = {v.name for n in nodes for v in n.outputs}
    outside_use = {i for k, n in enumerate(g.nodes) if k not in set(node_ids) for i in n.inputs} | set(g.outputs)
    sub = Graph(name="pattern")
    seen: set[str] = set()
    for n in nodes:
        for i in n.inputs:
            if i in inside or i in seen:
                continue
            seen.add(i)
            if i in g.constants:
                sub.constants[i] = g.constants[i]
            else:
                sub.inputs.append(Value(i, types[i]))
    sub.nodes = [Node(n.op, list(n.inputs), list(n.outputs), dict(n.attrs), n.name) for n in nodes]
    used = {i for n in nodes for i in n.inputs}
    sub.outputs = [v.name for n in nodes for v in n.outputs if v.name in outside_use or v.name not in used]
    if not sub.outputs or not sub.inputs:  # a pattern needs a context to read from
        return None
    try:
        check_graph(sub)
    except Exception:  # a cut our checker refuses is no pattern
        return None
    return sub


def components(g: Graph) -> list[list[int]]:
    """Weakly connected components of the data-flow graph (node indices)."""
    producer = {v.name: k for k, n in enumerate(g.nodes) for v in n.outputs}
    parent = list(range(len(g.nodes)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for k, n in enumerate(g.nodes):
        for i in n.inputs:
            if i in producer:
                parent[find(k)] = find(producer[i])
    groups: dict[int, list[int]] = {}
    for k in range(len(g.nodes)):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


def cut_patterns(g: Graph, level: str, max_nodes: int) -> list[Graph]:
    if level == "block" and len(g.nodes) <= MAX_BLOCK_NODES:
        whole = cut(g, list(range(len(g.nodes))))
        if whole is not None:
            return [whole]
    out = []
    for comp in components(g):
        windows = [comp] if len(comp) <= max_nodes else [comp[i:i + max_nodes] for i in range(0, len(comp), max_nodes)]
        for w in windows:
            sub = cut(g, w)
            if sub is not None:
                out.append(sub)
    return out


def _structure_key(g: Graph) -> str:
    """Identical cuts (same operators, attributes, types and wiring) are one pattern."""
    names: dict[str, str] = {}
    for k, v in enumerate(g.inputs):
        names[v.name] = f"i{k}"
    for k, c in enumerate(g.constants):
        names[c] = f"c{k}:{g.constants[c].dtype}{list(g.constants[c].shape)}"
    parts = [",".join(f"{v.type}" for v in g.inputs)]
    for k, n in enumerate(g.nodes):
        for j, v in enumerate(n.outputs):
            names[v.name] = f"n{k}.{j}"
        parts.append(f"{n.op}({','.join(names.get(i, '?') for i in n.inputs)}){json.dumps(n.attrs, sort_keys=True, default=str)}")
    return ";".join(parts)


def _dedup(patterns: list[Pattern]) -> list[Pattern]:
    seen: dict[str, Pattern] = {}
    for p in patterns:
        key = _structure_key(p.graph)
        if key in seen:
            for c, ts in p.targets.items():  # one structure, several optimizations: keep every tag
                have = seen[key].targets.setdefault(c, [])
                have.extend(t for t in ts if t not in have)
        else:
            seen[key] = p
    return list(seen.values())


def rewritten_nodes(model: object, optimization: str) -> set[int] | None:
    """Indices of the ONNX nodes that ONNXRuntime's `optimization` rewrites in `model` (removes,
    fuses or replaces): present in the optimized model when it is disabled, absent when enabled
    (untouched nodes keep their names). None when ORT cannot tell (not installed, the model does
    not load, the optimizer is not switchable by name)."""
    from dlcfuzz.backends.onnxruntime.trigger import ORT_BY_REWRITE

    if optimization in ORT_BY_REWRITE:
        return None
    try:
        import onnx

        from dlcfuzz.backends.base import Config
        from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend
    except ImportError:
        return None
    m = onnx.ModelProto()
    m.CopyFrom(model)  # type: ignore[arg-type]
    for k, n in enumerate(m.graph.node):
        n.name = f"dlcfuzz_n{k}"
    data = m.SerializeToString()
    backend = OnnxRuntimeBackend()

    def names(level: str, disabled: list[str]) -> set[str]:
        dumped = backend.compile_onnx(data, Config("x", {"opt_level": level, "dump": True,
                                                        "disabled_optimizers": disabled})).optimized_model
        return {n.name for n in onnx.load_from_string(dumped).graph.node} if dumped else set()

    try:
        for level in ("extended", "all"):
            gone = names(level, [optimization]) - names(level, [])
            if gone:
                return {int(x.removeprefix("dlcfuzz_n")) for x in gone if x.startswith("dlcfuzz_n")}
    except Exception:  # a test model ORT itself rejects: no rewrite to locate
        return None
    return None


def extract_onnx_dir(root: Path, compiler: str = "onnxruntime", max_nodes: int = 12,
                     limit: int | None = None, aware: bool = False) -> tuple[list[Pattern], ExtractReport]:
    """With `aware` (ONNXRuntime sources), a subgraph-level pattern is the part of the model that
    the optimization really rewrites (located by running ORT with it enabled and disabled), when
    ORT can locate it; otherwise, and for block-level optimizations, the cut by components. Off by
    default: the ORT optimizer-test corpus holds models captured after the optimization ran (its
    ConvActivationFusion models already contain FusedConv), where it locates 3 of 2,123 at 25x the
    extraction time."""
    import onnx

    from dlcfuzz.lower.onnx_import import import_model

    report = ExtractReport()
    patterns: list[Pattern] = []
    files = sorted(root.rglob("*.onnx"))[:limit]
    for f in files:
        report.sources += 1
        optimization = f.parent.name if f.parent != root else f.stem
        try:
            model = onnx.load(str(f))
            res = import_model(model, partial=True)
        except Exception:  # unreadable or malformed models are counted, never fatal
            report.unreadable += 1
            continue
        for s in res.skipped:
            if s.op_type not in ("initializer", "input", "output"):
                report.skipped[(s.domain, s.op_type)] += 1
        if res.graph is None or not res.graph.nodes:
            continue
        report.imported += 1
        level = granularity(optimization)
        target = optimization_name(compiler, optimization)
        cuts = None
        if aware and compiler == "onnxruntime" and target and level == "subgraph":
            where = rewritten_nodes(model, target)
            hit = [k for k, n in enumerate(res.graph.nodes) if where and res.origins.get(n.name) in where]
            if hit:
                report.located += 1
                sub_graph = Graph(res.graph.inputs, res.graph.constants, [res.graph.nodes[k] for k in hit],
                                  res.graph.outputs)
                cuts = [c for comp in components(sub_graph) if (c := cut(res.graph, [hit[i] for i in comp]))]
        for k, sub in enumerate(cuts if cuts else cut_patterns(res.graph, level, max_nodes)):
            patterns.append(Pattern(f"{optimization}/{f.stem}#{k}", sub, {compiler: [target] if target else []}, level,
                                    f"onnx:{f.relative_to(root)}", {"tested_by": optimization}))
    patterns = keep_usable(_dedup(patterns), compiler, report)
    for p in patterns:
        for t in p.targets.get(compiler, []):
            report.per_optimization[t] += 1
    args = ["--from", root.name, "--compiler", compiler, "--max-nodes", str(max_nodes)]
    args += (["--limit", str(limit)] if limit else []) + (["--aware"] if aware else [])
    report.provenance = _provenance("onnx models, one folder per optimization", root.name, compiler,
                                    sorted({f.parent.name for f in files if f.parent != root}), args)
    return patterns, report


def extract_pytest(path: Path, compiler: str = "tvm", max_nodes: int = 12,
                   timeout_s: float = 600.0) -> tuple[list[Pattern], ExtractReport]:
    """Run pytest on `path` in a subprocess with the recording plugin; cut patterns from every
    recorded (module, pass) pair."""
    import tempfile

    from dlcfuzz.errors import UsageError

    report = ExtractReport()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "passes.jsonl"
        folder = path if path.is_dir() else path.parent
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "dlcfuzz.backends.tvm.pytest_plugin", "-p", "no:cacheprovider",
               "-o", "python_files=test_*.py case_*.py", f"--rootdir={folder}", f"--confcutdir={folder}", str(path)]
        env = {**os.environ, "DLCFUZZ_PASS_LOG": str(log)}
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise UsageError(f"--pytest: the test run took longer than {timeout_s:.0f} s") from None
        if proc.returncode not in (0, 1):  # 1: some tests failed; records still count
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise UsageError(f"--pytest: pytest exited with {proc.returncode}: {' / '.join(tail)}")
        # no log: the tests ran no pass at all (the plugin writes on the first call)
        records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    from dlcfuzz.backends.tvm.passes import PASSES

    # A test that legalizes before it fuses hands FuseOps a module of TIR calls, which holds no
    # operator graph: a converted module is a pattern source for every pass of the pass table that
    # its test applies (to it, or to what the earlier passes made of it).
    per_test: dict[str, list[str]] = {}
    for r in records:
        if r["pass"] in PASSES and r["pass"] not in per_test.setdefault(r["test"], []):
            per_test[r["test"]].append(r["pass"])
    patterns: list[Pattern] = []
    for r in records:
        report.sources += 1
        if not r.get("graphs"):
            continue
        report.imported += 1
        later = per_test.get(r["test"], [])
        targets = later[later.index(r["pass"]):] if r["pass"] in later else later
        level = "block" if any(granularity(t) == "block" for t in targets) else "subgraph"
        for gname, blob in r["graphs"]:
            g = loads(base64.b64decode(blob))
            for k, sub in enumerate(cut_patterns(g, level, max_nodes)):
                patterns.append(Pattern(f"{r['pass']}/{r['test'].split('::')[-1]}/{gname}#{k}", sub,
                                        {compiler: list(targets)}, level, f"pytest:{r['test']}"))
    patterns = keep_usable(_dedup(patterns), compiler, report)
    for p in patterns:
        for t in p.targets.get(compiler, []):
            report.per_optimization[t] += 1
    report.provenance = _provenance("pytest run recording every pass call", path.name, compiler,
                                    sorted({r["test"].split("::")[0] for r in records}),
                                    ["--pytest", path.name, "--compiler", compiler, "--max-nodes", str(max_nodes)])
    try:
        import tvm

        report.provenance["tvm"] = tvm.__version__  # the TVM that ran the tests (and converted their modules)
    except ImportError:
        pass
    return patterns, report

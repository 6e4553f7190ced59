"""dlcfuzz command line: ops | gen | fuzz | replay | list | report | issue."""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path

import numpy as np

from dlcfuzz.errors import DlcfuzzError, UsageError


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*", text)
    if not m:
        raise UsageError(f"malformed duration {text!r} (examples: 60s, 10m, 1h, 90)")
    value = float(m.group(1))
    return value * {"ms": 1e-3, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]


def cmd_zoo(a: argparse.Namespace) -> int:
    from dlcfuzz.zoo import ZOO, build, summary

    for name, info in ZOO.items():
        nodes, params = summary(build(name))
        print(f"{name:16s} {nodes:5d} nodes {params:12,d} parameters  {info.description}")
    return 0


def cmd_ops(a: argparse.Namespace) -> int:
    from dlcfuzz.ops import all_ops

    rows = [{"name": s.name, "family": s.family, "inputs": s.n_inputs, "dtypes": list(s.dtypes),
             "onnx": list(s.onnx_ops)} for s in all_ops()]
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'operator':18} {'family':12} {'onnx':22} dtypes")
    for r in rows:
        print(f"{r['name']:18} {r['family']:12} {','.join(r['onnx']):22} {' '.join(r['dtypes'])}")
    print(f"{len(rows)} operators")
    return 0


def cmd_gen(a: argparse.Namespace) -> int:
    from dlcfuzz.gen.random import generate
    from dlcfuzz.ir import save
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.ops import check_graph
    from dlcfuzz.oracle.policy import test_seed

    out = Path(a.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {out}: {e.strerror}") from None
    import onnx

    for i in range(a.count):
        seed = test_seed(a.seed, i)
        g = generate(np.random.default_rng(seed), a.ops)
        check_graph(g)
        save(g, out / f"graph{i:05d}.json")
        model = to_onnx(g)
        onnx.checker.check_model(model)
        onnx.save(model, str(out / f"graph{i:05d}.onnx"))
    print(f"wrote {a.count} graphs (JSON + ONNX) to {out}")
    return 0


def cmd_fuzz(a: argparse.Namespace) -> int:
    from dlcfuzz.engine.campaign import Campaign, CampaignOptions
    from dlcfuzz.strategies import all_options

    given = {name: getattr(a, name) for name in all_options() if hasattr(a, name)}
    if a.cluster:  # checked before anything is written; by default one actor per CPU of the cluster
        from dlcfuzz.exec.cluster import cluster_jobs

        a.jobs = cluster_jobs(a.cluster, a.jobs)
    elif a.jobs is None:
        a.jobs = 2
    if a.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    reduce_budget = None if a.reduce_budget is None else parse_duration(a.reduce_budget)
    if a.resume:
        if a.input_sets is not None:
            given["input_sets"] = a.input_sets
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise UsageError(f"--resume continues a campaign with its own options: {flags} cannot change")
        opts = CampaignOptions(seconds=parse_duration(a.time), jobs=a.jobs, out=Path(a.resume), quiet=a.quiet,
                               max_tests=a.max_tests, reduce=not a.no_reduce, reduce_budget_s=reduce_budget,
                               cluster=a.cluster)
        camp = Campaign(opts, resume=True)
    else:
        opts = CampaignOptions(compiler=a.compiler, strategy=a.strategy, seconds=parse_duration(a.time), jobs=a.jobs,
                               seed=a.seed, out=Path(a.out), max_tests=a.max_tests, quiet=a.quiet,
                               configs=[c for c in (a.configs or "").split(",") if c], reduce=not a.no_reduce,
                               reduce_budget_s=reduce_budget, keep_tests=a.keep_tests, params=given, cluster=a.cluster,
                               input_sets=a.input_sets)
        camp = Campaign(opts)
    report = camp.run()
    print(f"report: {report}")
    print(f"suspected reference errors: {_suspected(Path(camp.out))} (dlcfuzz's bugs until shown otherwise: "
          "`dlcfuzz list` marks them)")
    print(f"internal errors: {camp.internal.count}")  # the last line; exit status 3 when there were any
    return 3 if camp.internal.count else 0


def _open_store(run: str):
    from dlcfuzz.engine.store import Store

    path = Path(run) / "store.sqlite" if Path(run).is_dir() else Path(run)
    if not path.exists():
        raise UsageError(f"no campaign store at {path}")
    return Store(path, create=False)


def _register(a: argparse.Namespace):
    from dlcfuzz.engine.known import Register

    return Register(extra=a.known or [])


def cmd_list(a: argparse.Namespace) -> int:
    """Root-cause clusters first (`cluster K: ...`), their distinct findings inside, known bugs marked."""
    from dlcfuzz.engine.report import applied_line, classify, cluster_known, minimized_to, second_opinion_counts
    from dlcfuzz.oracle.opinions import CONFIRMED, SUSPECTED, UNDECIDED, summary_of

    register = _register(a)
    store = _open_store(a.run)
    try:
        rows = {f["id"]: f for f in store.findings(distinct_only=True)}
        dups = store.duplicate_counts()
        clusters, known = classify(Path(a.run), store, register)
    except sqlite3.DatabaseError as e:  # corrupt files
        raise UsageError(f"{a.run}: unreadable store: {e}") from None
    for c in clusters:
        k = cluster_known(c, known)
        print(f"cluster {c.number}: {c.describe()}  [{'known: ' + k.ref if k else 'new'}]")
        for m in c.members:
            f = rows[m.id]
            first = (f["detail"] or "").splitlines()[0][:70] if f["detail"] else ""
            mark = f"  known: {known[m.id].ref}" if m.id in known and k is None else ""
            mark += f"  {SUSPECTED.upper()}" if summary_of(f) == SUSPECTED else ""
            mark += f"  minimized to: {minimal}" if (minimal := minimized_to(f["key"])) else ""
            print(f"  #{f['id']:<4} {f['category']:22} x{1 + dups.get(f['id'], 0):<4} "
                  f"{f['reduced_nodes'] or f['nodes']:>3}{'+' if f.get('not_minimal') else ' '}nodes  "
                  f"{', '.join(json.loads(f['configs'] or '[]'))}  "
                  f"{first}{mark}")
    if any(f.get("not_minimal") for f in rows.values()):
        print("(N+ nodes: not reduced to a minimal form; `dlcfuzz issue RUN N` says why)")
    n_known = sum(1 for c in clusters if cluster_known(c, known) is not None)
    split = second_opinion_counts(rows.values())
    print(f"second opinions: {split[CONFIRMED]} {CONFIRMED}, {split[SUSPECTED]} {SUSPECTED}(s) (dlcfuzz's bugs "
          f"until shown otherwise), {split[UNDECIDED]} {UNDECIDED}")
    applied = applied_line(store)
    if applied:
        print(applied)
    print(f"{len(rows)} distinct findings in {len(clusters)} clusters: {len(clusters) - n_known} new, {n_known} known")
    return 0


def _suspected(run: Path) -> int:
    """The campaign's distinct findings whose second opinion suspects our reference (all its runs)."""
    from dlcfuzz.engine.report import second_opinion_counts
    from dlcfuzz.engine.store import Store
    from dlcfuzz.oracle.opinions import SUSPECTED

    store = Store(run / "store.sqlite", create=False)
    try:
        return second_opinion_counts(store.findings(distinct_only=True))[SUSPECTED]
    finally:
        store.close()


def cmd_report(a: argparse.Namespace) -> int:
    from dlcfuzz.engine.report import write_report

    register = _register(a)
    store = _open_store(a.run)
    try:
        path = write_report(Path(a.run), store, register)
    except sqlite3.DatabaseError as e:
        raise UsageError(f"{a.run}: unreadable store: {e}") from None
    print(f"report: {path}")
    return 0


def cmd_merge(a: argparse.Namespace) -> int:
    """One campaign folder from several shards' (engine/merge.py); findings deduplicated across them."""
    from dlcfuzz.engine.merge import merge_campaigns

    m = merge_campaigns(Path(a.out), [Path(p) for p in a.shards])
    print(f"merged {m.shards} campaigns into {a.out}: {m.tests} tests, {m.findings} findings, {m.distinct} distinct "
          f"({m.cross_shard_duplicates} found by more than one shard)")
    return 0


def cmd_issue(a: argparse.Namespace) -> int:
    """An upstream issue in Markdown for finding N (a duplicate's issue is its first finding's)."""
    from dlcfuzz.engine.clusters import facts_of, finding_folder
    from dlcfuzz.engine.issue import issue_for
    from dlcfuzz.engine.report import tested_configs

    register = _register(a)
    store = _open_store(a.run)
    try:
        rows = {f["id"]: f for f in store.findings(distinct_only=False)}
        dups = store.duplicate_counts()
    except sqlite3.DatabaseError as e:
        raise UsageError(f"{a.run}: unreadable store: {e}") from None
    if a.finding not in rows:
        raise UsageError(f"no finding {a.finding} in {a.run} (dlcfuzz list {a.run} shows them)")
    row = rows[a.finding]
    if row["duplicate_of"] is not None:
        row = rows[row["duplicate_of"]]
    folder = finding_folder(Path(a.run), row)
    known = register.match(facts_of(row, folder), row["detail"] or "")
    text = issue_for(Path(a.run), row, known=known, run_repro=a.run_repro, duplicates=dups.get(row["id"], 0),
                     tested=tested_configs(store, row["test_id"])).markdown
    if a.out:
        try:
            Path(a.out).write_text(text)
        except OSError as e:
            raise UsageError(f"cannot write {a.out}: {e.strerror}") from None
        print(f"issue: {a.out}")
    else:
        print(text, end="")
    return 0


def cmd_replay(a: argparse.Namespace) -> int:
    """Re-run a stored test (or a graph file) in the sandbox and print the verdicts."""
    target = Path(a.target)
    if target.suffix == ".json":
        verdicts = _replay_graph(a, target)
    else:
        from dlcfuzz.engine.campaign import replay
        from dlcfuzz.errors import InternalError

        store = _open_store(a.target)
        if a.finding is not None:
            test_id = store.finding_test(a.finding)
        elif a.test is not None:
            test_id = a.test
        else:
            raise UsageError("replay of a campaign needs --finding ID or --test ID")
        store.close()
        try:
            verdicts = replay(Path(a.target), test_id, a.timeout)
        except InternalError as e:
            print(f"internal error: {e}", file=sys.stderr)
            return 1
    for v in verdicts:
        print(f"{v.kind}: {v.category} {', '.join(v.configs)}\n  {v.detail.splitlines()[0] if v.detail else ''}")
    return 1 if any(v.kind == "bug" for v in verdicts) else 0


def _replay_graph(a: argparse.Namespace, path: Path) -> list:
    """A graph file compiled by the backend's default pair, judged against the reference."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.pool import WorkerPool
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.ir import load
    from dlcfuzz.ops import check_graph
    from dlcfuzz.oracle.policy import reference_of
    from dlcfuzz.oracle.testcase import TestCase, observations_from_bytes
    from dlcfuzz.oracle.verdict import crash_verdict, judge

    g = load(path)
    check_graph(g)
    compiler = a.compiler or "onnxruntime"
    backend = get_backend(compiler)
    tc = TestCase(g, sample_inputs(g, np.random.default_rng(a.seed)), list(backend.default_pair()), compiler=compiler)
    ref = reference_of(tc)
    with WorkerPool("dlcfuzz.exec.worker:make_handler", {"compiler": compiler}, jobs=1, timeout_s=a.timeout) as pool:
        res = pool.run(tc.to_bytes())
    if res.status != "ok":
        return [crash_verdict(compiler, res.status, res.error or "", res.progress, res.stderr_tail or "")]
    if ref.reason:
        print(f"unknown: {ref.reason}")
    return judge(compiler, backend.expected_error, ref.outputs, observations_from_bytes(res.payload)[0], ref.unstable)


def cmd_patterns_extract(a: argparse.Namespace) -> int:
    from dlcfuzz.synth.extract import extract_onnx_dir, extract_pytest
    from dlcfuzz.synth.pattern import save_patterns

    if a.max_nodes < 1 or (a.limit is not None and a.limit < 1):
        raise UsageError("--max-nodes and --limit must be at least 1")
    if a.from_dir:
        if not Path(a.from_dir).is_dir():
            raise UsageError(f"--from: {a.from_dir} is not a folder")
        patterns, report = extract_onnx_dir(Path(a.from_dir), compiler=a.compiler or "onnxruntime",
                                            max_nodes=a.max_nodes, limit=a.limit, aware=a.aware)
    else:
        if not Path(a.pytest).exists():
            raise UsageError(f"--pytest: {a.pytest} does not exist")
        patterns, report = extract_pytest(Path(a.pytest), compiler=a.compiler or "tvm", max_nodes=a.max_nodes)
    save_patterns(patterns, a.out, source=report.provenance)
    print(report.summary())
    print(f"wrote {len(patterns)} patterns to {a.out}")
    return 0


def cmd_patterns_list(a: argparse.Namespace) -> int:
    from dlcfuzz.strategies.oatest import campaign_patterns

    patterns = campaign_patterns(a.file, a.compiler or "onnxruntime")
    if a.compiler:
        from dlcfuzz.backends import get_backend

        patterns = [p for p in patterns if p.targets_for(get_backend(a.compiler).pattern_targets())]
    print(f"{'pattern':28} {'granularity':11} {'nodes':>5} {'holes':>5}  targets")
    for p in patterns:
        targets = "; ".join(f"{c}: {','.join(ts)}" for c, ts in sorted(p.targets.items()) if ts)
        print(f"{p.name[:28]:28} {p.granularity:11} {len(p.graph.nodes):5d} {len(p.holes):5d}  {targets}")
    print(f"{len(patterns)} patterns")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from dlcfuzz.backends import backend_names
    from dlcfuzz.strategies import all_options, get_strategy, strategy_names

    p = argparse.ArgumentParser(prog="dlcfuzz", description="Find bugs in deep-learning compilers.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ops", help="table of operators with their dtypes")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_ops)
    s = sub.add_parser("zoo", help="model architectures the metamorphic strategy mutates")
    s.set_defaults(fn=cmd_zoo)
    s = sub.add_parser("gen", help="generate random valid graphs (JSON + ONNX)")
    s.add_argument("--count", type=int, default=10)
    s.add_argument("--ops", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_gen)
    s = sub.add_parser("fuzz", help="run a fuzz campaign")
    s.add_argument("--compiler", default="onnxruntime", help=f"one of {', '.join(backend_names())} (or planted:FAULT@OP)")
    s.add_argument("--strategy", default="auto", help="; ".join(
        f"{n}: {get_strategy(n).summary}" for n in strategy_names()))
    for o in all_options().values():  # each strategy's own options; those of another strategy are refused
        s.add_argument("--" + o.name.replace("_", "-"), dest=o.name, type=o.type, default=argparse.SUPPRESS,
                       help=f"{o.help} (default {o.default})")
    s.add_argument("--time", default="60s", help="testing budget, e.g. 60s, 10m, 2h (each new finding's reduction "
                   "runs on its own budget on top, and a release's first capability probe before it)")
    s.add_argument("--jobs", type=int, default=None, help="workers (default 2; with --cluster, one per CPU of the cluster)")
    s.add_argument("--cluster", metavar="auto|ADDRESS", help="run the workers as Ray actors on every node of a Ray "
                   "cluster (auto: the running one, else a local one); needs the extra 'cluster'")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="runs/default")
    s.add_argument("--resume", metavar="RUN", help="continue the campaign stored in RUN")
    s.add_argument("--configs", help="comma-separated configuration names to compare (default: the backend's pair)")
    s.add_argument("--max-tests", type=int, dest="max_tests", help="stop at this many tests in all (a resumed campaign counts its earlier ones)")
    s.add_argument("--input-sets", type=int, dest="input_sets", metavar="K",
                   help="input sets each compiled test runs, each judged against the reference (default: the "
                        "compiler's own, 8 where a compile costs seconds and a run milliseconds, else 1)")
    s.add_argument("--no-reduce", action="store_true")
    s.add_argument("--reduce-budget", dest="reduce_budget", metavar="TIME",
                   help="wall-clock budget of one finding's reduction, e.g. 30s, 5m (default: the compiler's own, "
                        "2 min for most)")
    s.add_argument("--keep-tests", action="store_true", dest="keep_tests",
                   help="keep every test whole in the store (by default routine tests keep one row: they regenerate)")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(fn=cmd_fuzz)
    s = sub.add_parser("patterns", help="optimization patterns for --strategy oatest: extract, list")
    pat = s.add_subparsers(dest="patterns_cmd", required=True)
    t = pat.add_parser("extract", help="cut patterns from ONNX models (one folder per optimization) or a pytest run")
    src = t.add_mutually_exclusive_group(required=True)
    src.add_argument("--from", dest="from_dir", metavar="DIR", help="folder of ONNX models; a subfolder's name is the optimization")
    src.add_argument("--pytest", metavar="PATH", help="Python test files/folder: every TVM pass call is recorded")
    t.add_argument("--out", required=True, help="pattern file to write (JSON)")
    t.add_argument("--compiler", default=None, help="whose optimizations the sources test (default: onnxruntime for --from, tvm for --pytest)")
    t.add_argument("--max-nodes", type=int, default=12, dest="max_nodes", help="largest subgraph-level pattern")
    t.add_argument("--limit", type=int, default=None, help="read at most this many models")
    t.add_argument("--aware", action="store_true",
                   help="--from, ONNXRuntime: cut only the nodes the optimization rewrites (located by running ORT)")
    t.set_defaults(fn=cmd_patterns_extract)
    t = pat.add_parser("list", help="list patterns (the built-in library, or a pattern file)")
    t.add_argument("file", nargs="?", help="pattern file (default: the built-in library)")
    t.add_argument("--compiler", default=None, help="only patterns targeting this compiler's optimizations")
    t.set_defaults(fn=cmd_patterns_list)
    s = sub.add_parser("replay", help="re-run a stored test or a graph file")
    s.add_argument("target", help="a campaign folder, or a graph .json")
    s.add_argument("--finding", type=int)
    s.add_argument("--test", type=int)
    s.add_argument("--compiler")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--timeout", type=float, default=60.0)
    s.set_defaults(fn=cmd_replay)
    known_help = "a known-bugs file (JSON, like backends/<compiler>/known_bugs.json); repeatable"
    s = sub.add_parser("list", help="list a campaign's root-cause clusters and distinct findings")
    s.add_argument("run")
    s.add_argument("--known", action="append", metavar="FILE", help=known_help)
    s.set_defaults(fn=cmd_list)
    s = sub.add_parser("report", help="write a campaign's HTML report")
    s.add_argument("run")
    s.add_argument("--known", action="append", metavar="FILE", help=known_help)
    s.set_defaults(fn=cmd_report)
    s = sub.add_parser("issue", help="write an upstream issue (Markdown) for a finding")
    s.add_argument("run")
    s.add_argument("finding", type=int, help="the finding's number (dlcfuzz list RUN)")
    s.add_argument("--known", action="append", metavar="FILE", help=known_help)
    s.add_argument("--run-repro", action="store_true", dest="run_repro",
                   help="run the finding's repro.py and include its output")
    s.add_argument("--out", help="write the issue to this file instead of printing it")
    s.set_defaults(fn=cmd_issue)
    s = sub.add_parser("merge", help="join the campaigns of several drivers (shards) into one folder, for reading")
    s.add_argument("shards", nargs="+", metavar="RUN", help="campaign folders: one compiler release, one strategy")
    s.add_argument("--out", required=True, help="the merged campaign folder (new)")
    s.set_defaults(fn=cmd_merge)
    from dlcfuzz.tvm_tir.verify.cli import add_parser as add_verify_parser

    add_verify_parser(sub)
    return p


def load_plugin_args(argv: list[str]) -> list[str]:
    """`--plugin MODULE` (anywhere, repeatable): import a module that registers strategies, compilers or
    operators before the registries are read; returns argv without those options."""
    import importlib

    from dlcfuzz.backends import note_plugin

    rest, i = [], 0
    while i < len(argv):
        if argv[i] == "--plugin" or argv[i].startswith("--plugin="):
            name = argv[i].split("=", 1)[1] if "=" in argv[i] else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if "=" in argv[i] else 2
            try:
                importlib.import_module(name)
            except ImportError as e:
                raise UsageError(f"--plugin {name}: cannot import it ({e})") from None
            note_plugin(name)  # workers import it too, whatever it registers (an operator, a lowering rule)
            continue
        rest.append(argv[i])
        i += 1
    return rest


def main(argv: list[str] | None = None) -> int:
    try:
        argv = load_plugin_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        print(f"dlcfuzz: error: {e}", file=sys.stderr)
        return 2
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        return a.fn(a)
    except (UsageError, DlcfuzzError) as e:
        print(f"dlcfuzz: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dlcfuzz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

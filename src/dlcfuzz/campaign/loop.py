"""The fuzz campaign: generate -> store (before running) -> sandboxed run -> oracles -> dedup -> reduce -> reproducer."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dlcfuzz import reference
from dlcfuzz.backends import get_backend
from dlcfuzz.backends.base import Config
from dlcfuzz.campaign.reproducer import make_script, metamorphic_ort_script
from dlcfuzz.engine.store import Store
from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes
from dlcfuzz.errors import UsageError
from dlcfuzz.gen.coverage import Coverage, graph_items
from dlcfuzz.gen.disruptive import RULES, generate_disruptive
from dlcfuzz.gen.hirgen import GUIDED_CANDIDATES, generate_guided
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.random import allowed_choices, generate
from dlcfuzz.ir import save, to_text
from dlcfuzz.ir.graph import Graph
from dlcfuzz.ops import all_ops, get_op
from dlcfuzz.oracle.numeric import all_finite, compare_one, tolerance
from dlcfuzz.oracle.signature import digest
from dlcfuzz.oracle.verdict import Verdict, crash_verdict, judge, judge_metamorphic, judge_rejection
from dlcfuzz.reduce.ddmin import ddmin
from dlcfuzz.reduce.graph import isolate_node, reduce_graph

HANDLER = "dlcfuzz.backends.worker:make_handler"
NUMERIC = ("inconsistency", "wrong-result", "metamorphic")
STRATEGIES = ("random", "hirgen", "hirgen-random", "metamorphic", "oatest", "tzer")  # tzer: lowlevel/campaign.py
MT_STEPS_PER_TEST = 10  # MT-DLComp tests every tenth mutant ...
MT_CHAIN_STEPS = 200  # ... of a chain M_k = mutate(M_k-1) this long (the paper: 1000; graphs grow by ~18
# nodes a step and compile time with them), then starts again from the seed
MODES = ("strict", "disruptive")
# Rules whose violation a compiler must reject. A dtype outside ONNX's type constraint is invalid
# ONNX, but Relax defines its own operators' dtypes, so TVM is held to shape/rank/mismatch rules only.
DISRUPTIVE_RULES = {"tvm": ("dtype-mismatch", "rank", "shape")}
P_OUTLINE = 0.7  # share of hirgen graphs on TVM whose node ranges become sub-functions
CROSS_METHOD = {"tvm": ("tvm-opt-compiled", "tvm-opt-c", "tvm-onnx-opt")}
DISRUPTIVE_CONFIGS = {"onnxruntime": ("ort-disable", "ort-all"), "tvm": ("tvm-opt", "tvm-onnx-opt")}
DEADLINE_S = {"tvm": 60.0}
DEFAULT_DEADLINE_S = 15.0
HANG_FACTOR = 4.0  # a timeout is re-run with this many times the deadline before it is called a hang


@dataclass
class CampaignOptions:
    compiler: str = "onnxruntime"
    strategy: str = "random"
    mode: str = "strict"
    seconds: float = 60.0
    jobs: int = 2
    seed: int = 0
    out: Path = Path("runs/default")
    ops: int = 10
    max_tests: int | None = None
    memory_mb: int = 4096
    timeout_s: float | None = None
    configs: list[str] = field(default_factory=list)
    only_ops: list[str] = field(default_factory=list)
    model: str = "resnet18"  # metamorphic: the zoo model mutated
    patterns: str | None = None  # oatest: a pattern file (`dlcfuzz patterns extract`); default the built-in library
    delta: float = 1e-4  # metamorphic: score tolerance between a mutant and its seed
    reduce: bool = True
    quiet: bool = False

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["out"] = str(self.out)
        return d


def known_gaps(compiler: str) -> Any:
    """op -> the dtypes whose compiler bugs or gaps are already documented in the op's spec (its
    allow-list, with the upstream reason): campaigns leave them out so that new bugs stand out."""
    attr = "relax_skip" if compiler == "tvm" else "ort_skip"
    return lambda op: getattr(get_op(op), attr, {})


def test_seed(master: int, seq: int) -> int:
    """Per-test seeds derived from the one master seed (replayable, independent of --jobs)."""
    return int(np.random.SeedSequence([master, seq]).generate_state(1, dtype=np.uint64)[0]) >> 1


@dataclass
class Reference:
    """The reference verdict on a test: outputs (None when unusable), why not, and unstable outputs."""

    outputs: list[np.ndarray] | None
    reason: str | None = None
    unstable: set[int] = field(default_factory=set)


def unstable_outputs(tc: TestCase, ref: list[np.ndarray]) -> set[int]:
    """Ill-conditioned outputs: evaluating without per-operator rounding, or with every float
    result moved by a legal rounding error, moves them by more than a quarter of their tolerance,
    so differences that compilers may legally make can cross the threshold, and no comparison on
    them is trusted."""
    # Without rounding, then with every float result moved by a legal rounding error, all up, all
    # down and at random (reference.run perturb=...: summation order, cancellation in sums, ulps).
    rng = np.random.default_rng(tc.seed ^ 0x5E45)
    unstable = set()
    evaluations = [reference.run(tc.graph, tc.inputs, exact=True)]
    evaluations += [reference.run(tc.graph, tc.inputs, perturb=how) for how in (1.0, -1.0, rng)]
    for evaluation in evaluations:
        for i, (o, r) in enumerate(zip(tc.graph.outputs, ref)):
            e = evaluation[o]
            with np.errstate(over="ignore", invalid="ignore"):  # beyond float16's range becomes inf: unstable
                rounded = e.astype(r.dtype)
            if not all_finite([e]) or compare_one(i, rounded, r, scale=0.25) is not None:
                unstable.add(i)
    # Discontinuities (argmax between near-equal values) taint everything downstream of them.
    tainted = near_ties(tc.graph, tc.inputs, tc.graph.functions)
    unstable.update(i for i, o in enumerate(tc.graph.outputs) if o in tainted)
    return unstable


def near_ties(g: Graph, inputs: dict[str, np.ndarray], functions: dict[str, Graph]) -> set[str]:
    """Values downstream of a discontinuity decided within tolerance (argmax of near-equal values);
    a call is tainted as a whole when its callee has one."""
    env = reference.run(g, inputs, keep_all=True, _functions=functions)
    tainted: set[str] = set()
    for n in g.nodes:
        xs = [env[i] for i in n.inputs]
        if n.op == "call":
            f = functions[n.attrs["callee"]]
            tie = bool(near_ties(f, {p.name: x for p, x in zip(f.inputs, xs)}, functions))
        else:
            tie = bool(xs) and get_op(n.op).near_tie(xs, n.attrs, tolerance(str(xs[0].dtype)))
        if tie or any(i in tainted for i in n.inputs):
            tainted.update(v.name for v in n.outputs)
    return tainted


def reference_of(tc: TestCase, tries: int = 3, stability: bool = True) -> Reference:
    """Reference outputs, re-sampling inputs until every value is finite.

    With stability=False the (costlier) ill-conditioning check is left to the caller, who runs
    it only when a comparison fails (see unstable_outputs).
    """
    rng = np.random.default_rng(tc.seed ^ 0x5EED)
    reason = "nonfinite-reference"
    for _ in range(tries):
        try:
            env = reference.run(tc.graph, tc.inputs, keep_all=True, check_overflow=True)
        except reference.IntegerDivisionByZero:
            env, reason = None, "integer-division-by-zero"
        except reference.IntegerOverflow:
            env, reason = None, "integer-overflow"
        # Every intermediate must be finite too: a NaN that a cast, comparison or max hides
        # is implementation-defined, and would make a "bug" of legal behaviour.
        if env is not None and all_finite(list(env.values())):
            ref = [env[o] for o in tc.graph.outputs]
            return Reference(ref, None, unstable_outputs(tc, ref) if stability else set())
        reason = reason if env is None else "nonfinite-reference"
        tc.inputs = sample_inputs(tc.graph, rng)
    return Reference(None, reason)


class Campaign:
    def __init__(self, opts: CampaignOptions, resume: bool = False) -> None:
        self.opts = opts
        self.out = Path(opts.out)
        self.log_lines: list[str] = []
        store_path = self.out / "store.sqlite"
        if resume:
            if not store_path.exists():
                raise UsageError(f"--resume: no campaign store at {store_path}")
            self.store = Store(store_path, create=False)
            first = self.store.first_run()
            if first is None:
                raise UsageError(f"--resume: {store_path} holds no campaign")
            saved = first["args"]
            # The campaign's identity comes from the store; only the budget may change.
            for k in ("compiler", "strategy", "mode", "seed", "ops", "configs", "only_ops", "model", "delta", "patterns"):
                setattr(self.opts, k, saved.get(k, getattr(self.opts, k)))
        else:
            if store_path.exists():
                raise UsageError(f"{self.out} already holds a campaign: use --resume {self.out} or another --out")
            if opts.strategy not in STRATEGIES:
                raise UsageError(f"unknown strategy {opts.strategy!r} (choose from {', '.join(STRATEGIES)})")
            if opts.mode not in MODES:
                raise UsageError(f"unknown mode {opts.mode!r} (choose from {', '.join(MODES)})")
            if opts.mode == "disruptive" and not opts.strategy.startswith("hirgen"):
                raise UsageError("--mode disruptive needs --strategy hirgen or hirgen-random")
            if opts.strategy == "metamorphic":
                from dlcfuzz.zoo import ZOO

                if opts.model not in ZOO:
                    raise UsageError(f"unknown model {opts.model!r} (choose from {', '.join(ZOO)}; see `dlcfuzz zoo`)")
            if opts.patterns:
                if opts.strategy != "oatest":
                    raise UsageError("--patterns needs --strategy oatest")
                from dlcfuzz.synth.pattern import load_patterns

                if not load_patterns(opts.patterns):
                    raise UsageError(f"{opts.patterns} holds no patterns")
            unknown_ops = [op for op in opts.only_ops if op not in {s.name for s in all_ops()}]
            if unknown_ops:
                raise UsageError(f"unknown operator(s) {unknown_ops}: see `dlcfuzz ops`")
            get_backend(opts.compiler)  # bad input is refused before anything is written
            try:
                self.out.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise UsageError(f"cannot create {self.out}: {e.strerror}") from None
            self.store = Store(store_path)
        self.backend = get_backend(self.opts.compiler)
        self.version = self.backend.version()
        all_configs = self.backend.configs()
        if self.opts.configs:
            unknown = [c for c in self.opts.configs if c not in all_configs]
            if unknown:
                raise UsageError(f"unknown configuration(s) {unknown} for {self.opts.compiler} (have {', '.join(all_configs)})")
            self.configs = [all_configs[c] for c in self.opts.configs]
        else:
            self.configs = list(self.backend.default_pair())
        if self.opts.mode == "disruptive":
            # unless the user picked them: the configurations with the most distinct front doors
            if not self.opts.configs:
                self.configs = [all_configs[n] for n in DISRUPTIVE_CONFIGS.get(self.opts.compiler, ())] or self.configs
        self.coverage = Coverage(self.store.coverage())
        self.run_id = self.store.new_run(self.opts.seed, self.opts.compiler, self.version, self.opts.strategy, self.opts.to_json())
        self.counts = {"tests": 0, "valid": 0, "bugs": 0, "unknown": 0, "findings": 0, "distinct": 0, "rejected": 0}
        self._choices: Any = None
        self._chain: dict[str, Any] = {}  # metamorphic: seed, inputs, current mutant and its steps
        self.compiler_s = 0.0
        self.reduce_s = 0.0
        self.internal_errors = 0
        self._reducer: Any = None

    # ---- output --------------------------------------------------------
    def log(self, msg: str) -> None:
        if not self.opts.quiet:
            print(msg, file=sys.stderr, flush=True)

    def progress(self, elapsed: float, final: bool = False) -> None:
        c = self.counts
        rate = c["tests"] / elapsed if elapsed > 0 else 0.0
        valid = 100.0 * c["valid"] / c["tests"] if c["tests"] else 0.0
        if self.opts.mode == "disruptive":
            rejected = 100.0 * c["rejected"] / c["tests"] if c["tests"] else 0.0
            share = f"rejected {rejected:.0f}%"
        else:
            share = f"valid {valid:.0f}%"
        line = (f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] tests {c['tests']} ({rate:.1f}/s) "
                f"{share} findings {c['findings']} (distinct {c['distinct']}) unknown {c['unknown']} "
                f"coverage {len(self.coverage)}")
        if self.opts.quiet:
            return
        if sys.stderr.isatty() and not final:
            print("\r" + line, end="", file=sys.stderr, flush=True)
        else:
            print(("\r" if sys.stderr.isatty() else "") + line, file=sys.stderr, flush=True)

    # ---- main loop -----------------------------------------------------
    def run(self) -> Path:
        from dlcfuzz.backends.probe import load_or_probe
        from dlcfuzz.exec.pool import WorkerPool

        o = self.opts
        deadline = o.timeout_s or DEADLINE_S.get(o.compiler, DEFAULT_DEADLINE_S)
        start = time.monotonic()
        stop_at = start + o.seconds
        from dlcfuzz.synth.worker import HANDLER as OATEST_HANDLER  # the ordinary handler + trigger checks

        handler = OATEST_HANDLER if o.strategy == "oatest" else HANDLER
        with WorkerPool(handler, {"compiler": o.compiler}, jobs=o.jobs, timeout_s=deadline, memory_mb=o.memory_mb) as pool:
            # the metamorphic strategy mutates a fixed model: no per-operator capabilities to probe
            caps = {} if o.strategy == "metamorphic" else load_or_probe(pool, self.backend, self.configs, log=self.log)
            gaps = known_gaps(o.compiler)
            supported = lambda op, dt: caps.get((op, dt), (True, ""))[0] and dt not in gaps(op)  # noqa: E731
            inflight: dict[int, tuple[int, TestCase, bool]] = {}
            for test_id, _seq, blob in self.store.pending_tests():  # a killed campaign's in-flight tests
                tc = TestCase.from_bytes(blob)
                inflight[pool.submit(tc.to_bytes())] = (test_id, tc, False)
            seq = self.store.next_seq()
            last_progress = last_stats = start
            while True:
                now = time.monotonic()
                out_of_budget = now >= stop_at or (o.max_tests is not None and seq >= o.max_tests)
                while not out_of_budget and len(inflight) < 2 * o.jobs:
                    tc, items = self.make_test(seq, supported)
                    blob = tc.to_bytes()
                    new = self.coverage.add(items)
                    test_id = self.store.add_test(self.run_id, seq, tc.seed, blob, new)  # stored before it runs
                    inflight[pool.submit(blob)] = (test_id, tc, False)
                    seq += 1
                    if o.max_tests is not None and seq >= o.max_tests:
                        break
                if not inflight:
                    break
                res = pool.next_result(timeout=0.5)
                if res is not None:
                    test_id, tc, rerun = inflight.pop(res.task_id)
                    if res.status == "timeout" and not rerun:
                        inflight[pool.submit(tc.to_bytes(), timeout_s=deadline * HANG_FACTOR)] = (test_id, tc, True)
                    else:
                        self.handle(test_id, tc, res, stop_at)
                now = time.monotonic()
                if now - last_progress >= 1.0:
                    self.progress(now - start)
                    last_progress = now
                if now - last_stats >= 5.0:
                    self.save_stats(now - start)
                    last_stats = now
            elapsed = time.monotonic() - start
            self.save_stats(elapsed)
            self.progress(elapsed, final=True)
        if self._reducer is not None:
            self._reducer.close()
        from dlcfuzz.engine.report import write_report

        report = write_report(self.out, self.store)
        self.store.close()
        return report

    def per_op_rules(self, config: str) -> bool:
        """Whether a configuration's front door checks each operator's rules in its own code (our
        direct lowering reaches each Relax operator's type inference), rather than one importer."""
        c = next((c for c in self.configs if c.name == config), None)
        return c is None or c.options.get("method", "direct") != "onnx"

    # ---- test generation -----------------------------------------------
    def make_test(self, seq: int, supported: Any) -> tuple[TestCase, list[str]]:
        """The test of number `seq`: a function of the master seed and the coverage so far."""
        o = self.opts
        seed = test_seed(o.seed, seq)
        rng = np.random.default_rng(seed)
        if self._choices is None:
            only = [get_op(n) for n in o.only_ops] or None
            self._choices = allowed_choices(only, None, supported)
        configs = self.configs
        meta: dict[str, Any] = {}
        if o.strategy == "metamorphic":
            return self.make_mutant(seq, rng), []
        if o.strategy == "oatest":  # OATest: a pattern spliced into a seed graph (synth/)
            from dlcfuzz.synth.campaign import make_test as synthesize_test

            return synthesize_test(self, seq, seed, rng, supported), []
        if o.strategy == "random":
            g = generate(rng, o.ops, ops=[s for s, _ in self._choices], supported=supported)
            inputs = sample_inputs(g, rng)
        elif o.mode == "disruptive":
            g, inputs, broken = generate_disruptive(rng, self.coverage, self._choices,
                                                    rules=DISRUPTIVE_RULES.get(o.compiler, RULES))
            configs = [Config(c.name, {**c.options, "untyped_outputs": [broken.output]}) for c in configs]
            meta["broken"] = broken.to_json()
            return TestCase(g, inputs, configs, seed=seed, compiler=o.compiler, strategy=o.strategy, meta=meta), [broken.item]
        else:
            g = generate_guided(rng, o.ops, self.coverage, self._choices,
                                candidates=GUIDED_CANDIDATES if o.strategy == "hirgen" else 1)
            if o.compiler == "tvm" and rng.random() < P_OUTLINE:  # Relax functions, calls, closures
                from dlcfuzz.gen.functions import outline

                g = outline(g, rng)
            inputs = sample_inputs(g, rng)
            configs = self.hirgen_configs(rng, g)
        return (TestCase(g, inputs, configs, seed=seed, compiler=o.compiler, strategy=o.strategy, meta=meta),
                list(graph_items(g)))

    def make_mutant(self, seq: int, rng: np.random.Generator) -> TestCase:
        """The next mutant of the chain (MT_STEPS_PER_TEST more steps). A resumed campaign rebuilds
        its last chain from the steps its tests recorded and goes on with it, exactly as the
        uninterrupted campaign would have."""
        from dlcfuzz.mutate.metamorphic import iterate, replay
        from dlcfuzz.zoo import sample_inputs as model_inputs

        o = self.opts
        ch = self._chain
        if "inputs" not in ch:
            seed_graph = self.seed_model()
            ch["inputs"] = model_inputs(seed_graph, o.seed)
            # PIOC profiles: the seed model's values on the inputs, for every chain (a profile taken
            # mid-chain would also hold earlier steps' values, and a resumed chain would diverge)
            ch["seed_profile"] = reference.run(seed_graph, ch["inputs"], keep_all=True)
            last = self.store.db.execute("SELECT blob FROM tests WHERE seq < ? ORDER BY seq DESC LIMIT 1",
                                         (seq,)).fetchone()
            mt = TestCase.from_bytes(last[0]).meta.get("metamorphic") if last else None
            steps = self.chain_steps(int(mt["chain"])) if mt else None
            if steps is not None and 0 < len(steps) < MT_CHAIN_STEPS:
                ch.update(graph=replay(seed_graph, steps, check=False), steps=steps, start=int(mt["chain"]),
                          profile=dict(ch["seed_profile"]))
        if "graph" not in ch or len(ch["steps"]) >= MT_CHAIN_STEPS:
            ch.update(graph=ch["seed"], steps=[], start=seq, profile=dict(ch["seed_profile"]))
            ch["chains"][seq] = ch["steps"]
        g, new = iterate(ch["graph"], rng, MT_STEPS_PER_TEST, ch["inputs"], profile=ch["profile"])
        ch["graph"] = g
        ch["steps"].extend(new)
        return self.mutant_test(g, seq, ch["start"], len(ch["steps"]), new)

    def chain_steps(self, start: int) -> list[Any] | None:
        """The steps of the chain that began at test `start`, from the steps each stored test of it
        recorded (None when a test lacks them: a store of an older dlcfuzz)."""
        from dlcfuzz.mutate.metamorphic import steps_from_json

        if start in self._chain.get("chains", {}):
            return self._chain["chains"][start]
        steps: list[Any] = []
        for (blob,) in self.store.db.execute("SELECT blob FROM tests WHERE seq >= ? ORDER BY seq", (start,)):
            mt = TestCase.from_bytes(blob).meta.get("metamorphic")
            if not mt or mt.get("chain") != start:
                break
            if "new_steps" not in mt:
                return None
            steps.extend(steps_from_json(mt["new_steps"]))
        self._chain.setdefault("chains", {})[start] = steps
        return steps

    def mutant_test(self, g: Graph, seq: int, start: int, n_steps: int, new_steps: list[Any] | None = None) -> TestCase:
        """A test case of mutant g; the seed's weights are left out of it (the worker rebuilds the
        seed model from the zoo), so stored tests of full-size models stay small. The test records
        the steps that were new in it: the store alone rebuilds every chain (resume, reduction)."""
        from dlcfuzz.mutate.metamorphic import steps_to_json

        o = self.opts
        seed = self._chain["seed"]
        shared = [k for k, a in g.constants.items() if seed.constants.get(k) is a]
        stored = g.light_copy()
        stored.constants = {k: a for k, a in g.constants.items() if k not in set(shared)}
        meta = {"metamorphic": {"model": o.model, "model_seed": o.seed, "shared": shared, "chain": start,
                                "steps": n_steps, "delta": o.delta}}
        if new_steps is not None:
            meta["metamorphic"]["new_steps"] = steps_to_json(new_steps)
        return TestCase(stored, dict(self._chain["inputs"]), self.configs, seed=test_seed(o.seed, seq),
                        compiler=o.compiler, strategy=o.strategy, meta=meta)

    def hirgen_configs(self, rng: np.random.Generator, g: Graph) -> list[Config]:
        """HirGen's three oracles, per test: the campaign's pair (original unoptimized vs optimized);
        on TVM the optimized one is a random order/subset of the Relax passes with a random function
        form, a function-rewritten variant (rewrite a/b/c) joins when the graph has sub-functions,
        and one other compilation method (VM exec mode, target or front door) is added."""
        cross = CROSS_METHOD.get(self.opts.compiler, ())
        if self.opts.configs or not cross:
            return self.configs
        all_configs = self.backend.configs()
        configs = list(self.configs)
        if self.opts.compiler == "tvm":
            from dlcfuzz.backends.relax_passes import KNOWN_BUGS, PASSES, sample_pass_sequence
            from dlcfuzz.lower.relax import FORMS

            opt = all_configs["tvm-opt"].options
            form = FORMS[int(rng.integers(len(FORMS)))]
            # passes with a documented TVM bug stay out (FuseOps' needs a closure in a dataflow
            # block: the closure form without ConvertToDataflow cannot make one)
            pool = [p for p in PASSES if p == "FuseOps" or p not in KNOWN_BUGS]
            if form == "closure":
                pool.remove("ConvertToDataflow")
            configs = [all_configs["tvm-unopt"],
                       Config("tvm-passes", {**opt, "passes": sample_pass_sequence(rng, pool=pool), "form": form})]
            if g.functions:
                kind = "abc"[int(rng.integers(3))]
                configs.append(Config(f"tvm-rewrite-{kind}", {**opt, "rewrite": kind,
                                                              "rewrite_seed": int(rng.integers(2**31)),
                                                              "form": FORMS[int(rng.integers(len(FORMS)))]}))
        names = [c.name for c in configs]
        extra = [n for n in cross if n in all_configs and n not in names]
        if extra:
            configs.append(all_configs[extra[int(rng.integers(len(extra)))]])
        return configs

    def save_stats(self, elapsed: float) -> None:
        c = self.counts
        self.store.add_stats(self.run_id, elapsed=elapsed, tests=c["tests"], valid=c["valid"], bugs=c["bugs"],
                             unknown=c["unknown"], findings=c["findings"], distinct_findings=c["distinct"],
                             compiler_s=self.compiler_s)

    # ---- one result ----------------------------------------------------
    def handle(self, test_id: int, tc: TestCase, res: Any, stop_at: float) -> None:
        self.counts["tests"] += 1
        observations = []
        broken = tc.meta.get("broken")
        if res.status == "ok" and broken:
            observations, _, _, _ = reply_from_bytes(res.payload)
            self.compiler_s += sum(ob.compile_s + ob.run_s for ob in observations)
            ref = Reference(None)
            verdicts = judge_rejection(tc.compiler, broken, observations, self.per_op_rules)
            self.counts["rejected"] += verdicts[0].category == "rejected"
        elif res.status == "ok" and tc.meta.get("metamorphic"):
            observations, _, _, _ = reply_from_bytes(res.payload)
            self.compiler_s += sum(ob.compile_s + ob.run_s for ob in observations if not ob.config.startswith("seed:"))
            ref = Reference(None)
            verdicts = judge_metamorphic(tc.compiler, observations, float(tc.meta["metamorphic"]["delta"]))
            if any(ob.status == "ok" for ob in observations):
                self.counts["valid"] += 1
        elif res.status == "ok":
            observations, _, r, new_inputs = reply_from_bytes(res.payload)
            if tc.meta.get("oatest"):  # which targeted optimizations fired (trigger rates)
                from dlcfuzz.synth.campaign import record_triggers

                record_triggers(self.store, test_id, tc, res.payload)
            ref = Reference(**r)
            if new_inputs is not None:  # the worker re-sampled them: the store keeps what really ran
                tc.inputs = new_inputs
                self.store.update_blob(test_id, tc.to_bytes())
            self.compiler_s += sum(ob.compile_s + ob.run_s for ob in observations)
            verdicts = judge(tc.compiler, self.backend.expected_error, ref.outputs, observations, ref.unstable)
            if ref.outputs is not None and any(v.category in NUMERIC for v in verdicts):
                ref.unstable = unstable_outputs(tc, ref.outputs)  # only now: it costs a second evaluation
                verdicts = judge(tc.compiler, self.backend.expected_error, ref.outputs, observations, ref.unstable)
            if any(ob.status == "ok" for ob in observations):
                self.counts["valid"] += 1
        else:
            # deterministic: the same inputs the dead worker used
            ref = Reference(None) if broken or tc.meta.get("metamorphic") else reference_of(tc)
            if res.status == "error":
                # dlcfuzz's own lowering failed: not the compiler's bug; counted and shown, never a finding.
                verdicts = [Verdict("unknown", "dlcfuzz-internal-error", res.error or "")]
                self.internal_errors += 1
                if self.internal_errors <= 3:
                    self.log(f"\ndlcfuzz internal error (test {test_id}): {(res.error or '').splitlines()[-1:]}")
            else:
                verdicts = [crash_verdict(tc.compiler, res.status, res.error or res.status, res.progress,
                                          res.stderr_tail or "")]
        if ref.reason:
            verdicts.append(Verdict("unknown", ref.reason))
        elif ref.unstable:
            verdicts.append(Verdict("unknown", "ill-conditioned-output"))
        bugs = [v for v in verdicts if v.kind == "bug"]
        for v in verdicts:
            if v.kind == "unknown":
                self.store.count_unknown(v.category)
        if bugs:
            self.counts["bugs"] += 1
        elif any(v.kind == "unknown" for v in verdicts):
            self.counts["unknown"] += 1
        for v in bugs:  # findings first: a kill before finish_test re-runs the test, never loses a finding
            self.record_finding(test_id, tc, ref, v, stop_at)
        self.store.finish_test(test_id, "bug" if bugs else ("unknown" if any(v.kind == "unknown" for v in verdicts) else "pass"),
                               res.seconds, observations)

    # ---- findings ------------------------------------------------------
    def reducer_pool(self) -> Any:
        from dlcfuzz.exec.pool import WorkerPool

        if self._reducer is None:
            deadline = self.opts.timeout_s or DEADLINE_S.get(self.opts.compiler, DEFAULT_DEADLINE_S)
            self._reducer = WorkerPool(HANDLER, {"compiler": self.opts.compiler}, jobs=1, timeout_s=deadline,
                                       memory_mb=self.opts.memory_mb)
        return self._reducer

    def still_fails(self, tc: TestCase, v: Verdict) -> Any:
        broken = tc.meta.get("broken")

        def predicate(g: Any, inputs: dict[str, np.ndarray]) -> bool:
            if broken and v.category == "accepted-invalid":
                cand = TestCase(g, inputs, [c for c in tc.configs if c.name in v.configs], seed=tc.seed,
                                compiler=tc.compiler, meta=tc.meta)
                res = self.reducer_pool().run(cand.to_bytes())
                return res.status == "ok" and any(
                    x.category == "accepted-invalid" and x.key == v.key
                    for x in judge_rejection(tc.compiler, broken, reply_from_bytes(res.payload)[0], self.per_op_rules))
            cand = TestCase(g, inputs, [c for c in tc.configs if c.name in v.configs] or tc.configs,
                            seed=tc.seed, compiler=tc.compiler)
            res = self.reducer_pool().run(cand.to_bytes())
            if res.status == "ok":
                obs, _, r, new_inputs = reply_from_bytes(res.payload)
                got = judge(tc.compiler, self.backend.expected_error, r["outputs"], obs)
                if r["outputs"] is not None and any(x.category in NUMERIC for x in got):
                    cand.inputs = new_inputs or cand.inputs
                    got = judge(tc.compiler, self.backend.expected_error, r["outputs"], obs,
                                unstable_outputs(cand, r["outputs"]))
            elif res.status == "error":
                return False
            else:
                got = [crash_verdict(tc.compiler, res.status, res.error or res.status, res.progress, res.stderr_tail or "")]
            if v.category in NUMERIC:  # cutting may make the reference usable (an inconsistency becomes a
                # wrong result of one of the configurations) or unusable (the reverse): same finding
                return any(x.kind == "bug" and x.category in NUMERIC for x in got)
            return any(x.kind == "bug" and x.category == v.category and x.key == v.key for x in got)

        return predicate

    def seed_model(self) -> Graph:
        from dlcfuzz.zoo import build

        if "seed" not in self._chain:
            self._chain.update(seed=build(self.opts.model, self.opts.seed), chains={})
        return self._chain["seed"]

    def mutant_fails(self, tc: TestCase, v: Verdict) -> Any:
        """Predicate over candidate mutants: compiled next to the seed model by the finding's
        configurations, does the candidate still show finding `v`?"""
        mt = tc.meta["metamorphic"]
        configs = [c for c in tc.configs if c.name in v.configs] or tc.configs

        def fails(g: Graph) -> bool:
            cand = self.mutant_test(g, 0, mt["chain"], mt["steps"])
            cand.configs = configs
            res = self.reducer_pool().run(cand.to_bytes())
            if res.status != "ok":  # a crash of the worker: the same crash?
                return res.status != "error" and v.key == crash_verdict(
                    tc.compiler, res.status, res.error or res.status, res.progress, res.stderr_tail or "").key
            got = judge_metamorphic(tc.compiler, reply_from_bytes(res.payload)[0], float(mt["delta"]))
            return any(x.kind == "bug" and x.category == v.category and (v.category == "metamorphic" or x.key == v.key)
                       for x in got)

        return fails

    def reduce_mutant(self, tc: TestCase, v: Verdict) -> Graph:
        """MT-DLComp's reduction, first two stages: delta debugging over the mutation steps (each
        subset completed by its dependencies), then each kept step's opaque condition replaced by
        the constant it provably is (zeros of its shape) where the finding survives that. Tests of
        an earlier session of a resumed campaign have no step record and keep their full mutant."""
        from dlcfuzz.mutate.metamorphic import closure, constant_conditions, replay

        mt = tc.meta["metamorphic"]
        seed = self.seed_model()
        full = tc.graph.light_copy()
        full.constants = {**{k: seed.constants[k] for k in mt["shared"]}, **tc.graph.constants}
        steps = self.chain_steps(int(mt["chain"]))
        if steps is None or len(steps) < mt["steps"]:
            return full
        fails = self.mutant_fails(tc, v)
        try:
            steps = steps[:mt["steps"]]
            kept = ddmin(steps, lambda subset: fails(replay(seed, subset, check=False)),
                         close=lambda xs: closure(steps, [s.id for s in xs]),
                         max_checks=40 if tc.compiler == "tvm" else 80)
            g = replay(seed, kept)
            return constant_conditions(g, fails)
        except Exception as e:  # a reducer failure must not lose the finding
            self.log(f"reduction failed: {type(e).__name__}: {e}")
            return full

    def reduce_mutant_nodes(self, tc: TestCase, v: Verdict, mutant: Graph) -> tuple[Graph, dict[str, np.ndarray]] | None:
        """The third stage: node-level reduction of the mutant alone. Every mutation leaves the
        reference output unchanged, so a mutant that the compiler computes differently from its seed
        is (almost always) one it computes differently from the reference interpreter: the usual
        differential oracle then drives `reduce_graph` to the few nodes that show it. None when the
        mutant alone does not show a reducible failure (e.g. the seed deviates the same way)."""
        if v.category == "metamorphic":
            as_plain = Verdict("bug", "wrong-result", v.detail, list(v.configs))
        elif v.category == "mutant-rejected":
            as_plain = Verdict("bug", "unexpected-error", v.detail, list(v.configs),
                               key="error|" + v.key.split("|", 1)[1])
        else:
            as_plain = v
        plain = TestCase(mutant, dict(tc.inputs), tc.configs, seed=tc.seed, compiler=tc.compiler)
        still = self.still_fails(plain, as_plain)
        plain_inputs = {x.name: tc.inputs[x.name] for x in mutant.inputs}
        if not still(mutant, plain_inputs):
            return None
        return reduce_graph(mutant, plain_inputs, still, max_checks=60 if tc.compiler == "tvm" else 150)

    def write_mutant_finding(self, folder: Path, fid: int, test_id: int, tc: TestCase, v: Verdict, reduced: Graph,
                             signature: str, key: str,
                             node_level: tuple[Graph, dict[str, np.ndarray]] | None = None) -> None:
        """mutant.json (the mutant after step reduction) and, for ONNXRuntime, seed.onnx + mutant.onnx
        with `repro_mutant.py` comparing them; with a node-level reduction, reduced.json/.txt/_inputs.npz
        and a standalone `repro.py` (for TVM too) that compares the compiler with the expected output."""
        from dlcfuzz.lower.onnx import to_onnx
        from dlcfuzz.mutate.metamorphic import owner

        folder.mkdir(parents=True, exist_ok=True)
        configs = [c for c in tc.configs if c.name in v.configs] or tc.configs
        steps = sorted({owner(n.name) for n in reduced.nodes if n.name and owner(n.name) is not None})
        title = f"dlcfuzz finding {fid}: {v.category} in {self.version} ({', '.join(v.configs)})"
        detail = (f"{v.detail}\nmodel {self.opts.model} (seed {self.opts.seed}); the mutant keeps "
                  f"{len(steps)} mutation step(s): {steps}")
        if node_level is not None:
            detail += f"\nnode-level reduction: {len(reduced.nodes)} -> {len(node_level[0].nodes)} nodes (reduced.txt)"
        save(reduced, folder / "mutant.json")
        (folder / "detail.txt").write_text(f"{title}\nsignature {signature}\nkey {key}\ntest {test_id}\n\n{detail}\n"
                                           f"replay: dlcfuzz replay {self.out} --test {test_id}\n")
        np.savez(folder / "inputs.npz", **tc.inputs)
        script = None
        if tc.compiler == "onnxruntime" or tc.compiler.startswith("planted:"):  # planted: ORT + a fault
            (folder / "seed.onnx").write_bytes(to_onnx(self.seed_model()).SerializeToString())
            (folder / "mutant.onnx").write_bytes(to_onnx(reduced).SerializeToString())
            script = metamorphic_ort_script(tc.inputs, configs, float(tc.meta["metamorphic"]["delta"]), title, detail,
                                            self.version)
            (folder / "repro_mutant.py").write_text(script)
        reduced_nodes = len(reduced.nodes)
        if node_level is not None:
            g, inputs = node_level
            rejected = v.category == "mutant-rejected"
            expected = None if rejected else reference_of(TestCase(g, dict(inputs), configs, seed=tc.seed), tries=1).outputs
            script = make_script(tc.compiler, g, inputs, expected, configs,
                                 "unexpected-error" if rejected else "wrong-result", title, detail, self.version)
            save(g, folder / "reduced.json")
            np.savez(folder / "reduced_inputs.npz", **inputs)
            (folder / "reduced.txt").write_text(to_text(g) + "\n")
            reduced_nodes = len(g.nodes)
        if script is not None:
            (folder / "repro.py").write_text(script)
        self.store.update_finding(fid, reproducer=script, reduced=None, reduced_nodes=reduced_nodes)
        self.log(f"\nnew finding {fid}: {v.category} ({', '.join(v.configs)}), {len(steps)} mutation steps kept, "
                 f"{reduced_nodes} nodes: {folder}")

    def record_finding(self, test_id: int, tc: TestCase, ref: Reference, v: Verdict, stop_at: float) -> None:
        self.counts["findings"] += 1
        # OATest identifies an optimized build's rejection, like an inconsistency, by its minimal optimization set
        numeric = v.category in NUMERIC or (bool(tc.meta.get("oatest")) and v.category == "inconsistent-rejection")
        key = v.key
        if self.store.has_finding_for(test_id, v.key):  # recorded before a kill; the test was re-run
            return
        existing = None if numeric else self.store.find_signature(digest(key))
        if existing is not None:
            self.store.add_finding(test_id=test_id, category=v.category, signature=digest(key), key=key,
                                   compiler=tc.compiler, version=self.version, configs=json.dumps(v.configs),
                                   detail=v.detail[:4000], duplicate_of=existing, nodes=len(tc.graph.nodes))
            return
        reduced, reduced_in = tc.graph, tc.inputs
        budget_left = stop_at - time.monotonic()
        broken = tc.meta.get("broken")
        mt = tc.meta.get("metamorphic")
        node_level = None
        if mt:
            t0 = time.monotonic()
            reduced = self.reduce_mutant(tc, v) if self.opts.reduce else tc.graph
            if self.opts.reduce and (budget_left > 0 or self.opts.max_tests is not None):
                try:
                    node_level = self.reduce_mutant_nodes(tc, v, reduced)
                except Exception as e:  # a reducer failure must not lose the finding
                    self.log(f"node-level reduction failed: {type(e).__name__}: {e}")
            self.reduce_s += time.monotonic() - t0
        elif broken and self.opts.reduce:
            try:
                cand, cand_in = isolate_node(tc.graph, tc.inputs, broken["node"])
                if cand.nodes != reduced.nodes and self.still_fails(tc, v)(cand, cand_in):
                    reduced, reduced_in = cand, cand_in
            except Exception as e:  # a reducer failure must not lose the finding
                self.log(f"reduction failed: {type(e).__name__}: {e}")
        elif self.opts.reduce and (budget_left > 0 or self.opts.max_tests is not None) and self.reduce_s < 0.4 * self.opts.seconds + 30:
            t0 = time.monotonic()
            try:
                reduced, reduced_in = reduce_graph(tc.graph, tc.inputs, self.still_fails(tc, v),
                                                   max_checks=60 if tc.compiler == "tvm" else 150)
            except Exception as e:  # a reducer failure must not lose the finding
                self.log(f"reduction failed: {type(e).__name__}: {e}")
            self.reduce_s += time.monotonic() - t0
        if numeric:
            # An inconsistency is identified by the configurations and the operators left after reduction.
            key = f"{key}|ops={','.join(sorted((node_level[0] if node_level else reduced).ops_used()))}"
            if tc.meta.get("oatest") and self.opts.reduce and self.reduce_s < 0.4 * self.opts.seconds + 30:
                from dlcfuzz.synth.campaign import minimal_set_key  # OATest dedup: the minimal optimization set

                t0 = time.monotonic()
                key = minimal_set_key(self, tc, reduced, reduced_in, v, key)
                self.reduce_s += time.monotonic() - t0
            existing = self.store.find_signature(digest(key))
        signature = digest(key)
        fid = self.store.add_finding(test_id=test_id, category=v.category, signature=signature, key=key,
                                     compiler=tc.compiler, version=self.version, configs=json.dumps(v.configs),
                                     detail=v.detail[:4000], duplicate_of=existing, nodes=len(tc.graph.nodes),
                                     reduced_nodes=len(reduced.nodes))
        if existing is not None:
            return
        self.counts["distinct"] += 1
        configs = [c for c in tc.configs if c.name in v.configs] or tc.configs
        folder = self.out / "findings" / f"{fid:04d}-{v.category}"
        if mt:
            self.write_mutant_finding(folder, fid, test_id, tc, v, reduced, signature, key, node_level)
            return
        red_ref = None if broken else reference_of(TestCase(reduced, dict(reduced_in), configs, seed=tc.seed), tries=1).outputs
        title = f"dlcfuzz finding {fid}: {v.category} in {self.version} ({', '.join(v.configs)})"
        script = make_script(tc.compiler, reduced, reduced_in, red_ref if v.category == "wrong-result" else None,
                             configs, v.category, title, v.detail, self.version,
                             untyped_outputs=[broken["output"]] if broken else ())
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "repro.py").write_text(script)
        save(tc.graph, folder / "original.json")
        save(reduced, folder / "reduced.json")
        np.savez(folder / "reduced_inputs.npz", **reduced_in)
        (folder / "reduced.txt").write_text(to_text(reduced) + "\n")
        (folder / "detail.txt").write_text(f"{title}\nsignature {signature}\nkey {key}\ntest {test_id}, seed {tc.seed}\n\n{v.detail}\n")
        self.store.update_finding(fid, reproducer=script, reduced=None)
        self.log(f"\nnew finding {fid}: {v.category} ({', '.join(v.configs)}), reduced {len(tc.graph.nodes)} -> "
                 f"{len(reduced.nodes)} nodes: {folder / 'repro.py'}")

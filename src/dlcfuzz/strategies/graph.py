"""Strategies over generated graphs, judged differentially against the NumPy reference; `random`.

`GraphStrategy` is what random, hirgen and oatest share: capability probing and known gaps, the
worker reply (observations, reference, re-sampled inputs), the differential oracle with its
ill-conditioning check, graph reduction and the finding folder (repro.py, original/reduced graph,
inputs, readable text). Each subclass only says how it makes a graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.ir import graphs_equal, save, to_text
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import DedupKey, numeric_reason, with_option
from dlcfuzz.oracle.opinions import SecondOpinion
from dlcfuzz.oracle.policy import (
    IMPLEMENTATION_DEFINED,
    NUMERIC,
    UNDEFINED_BEHAVIOUR,
    Reference,
    documented_limits,
    failure_reference_reason,
    invalid_rejections,
    other_reading_outputs,
    reference_of,
    unstable_outputs,
)
from dlcfuzz.oracle.testcase import Config, Observation, TestCase, reply_coverage, reply_from_bytes, reply_more_sets
from dlcfuzz.oracle.verdict import Verdict, crash_verdict, judge
from dlcfuzz.strategies.base import Context, Finding, Judgement, Option, Reduction, Strategy, Test, judgement_of_failure
from dlcfuzz.strategies.opinions import second_opinion

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend
    from dlcfuzz.exec.pool import Pool, TaskResult
    from dlcfuzz.gen.inputs import EdgeValues

OPS = Option("ops", 10, "operators per generated graph", int)
ONLY_OPS = Option("only_ops", [], "comma-separated operators to generate from (default: all)",
                  lambda s: [x for x in s.split(",") if x])
VALUES = Option("values", "edge", "input and constant values: edge (a share of tests gets the dtype's full range, "
                "boundaries, float magnitude classes and signed zeros, gen/inputs.py's profiles) or small (ints in "
                "[-5, 5], floats in [-2, 2] only)")
REGIONS = Option("regions", 0.05, "share of tests whose graph wraps node ranges in regions (conditionals, loops, "
                 "scans; gen/regions.py) where the compiler's baseline configuration lowers them; 0: none", float)
REGION_STREAM = 40  # the random stream of a test's regions, apart from its graph's (issue 40)
SIZES = Option("sizes", "mixed", "mixed: a share of tests gets long axes (odd, prime, around powers of two; "
               "gen/sizes.py); small: every axis 1..6")


def check_graph_params(params: dict[str, Any]) -> None:
    from dlcfuzz.errors import UsageError
    from dlcfuzz.gen.inputs import VALUES_MODES
    from dlcfuzz.gen.sizes import SIZE_MODES
    from dlcfuzz.ops import all_ops

    if params.get("ops", 1) < 1:
        raise UsageError("--ops must be at least 1")
    if params.get("values", VALUES.default) not in VALUES_MODES:
        raise UsageError(f"--values must be one of {', '.join(VALUES_MODES)}")
    if params.get("sizes", SIZES.default) not in SIZE_MODES:
        raise UsageError(f"--sizes must be one of {', '.join(SIZE_MODES)}")
    if not 0 <= float(params.get("regions", REGIONS.default)) <= 1:
        raise UsageError("--regions is a share of tests: between 0 and 1")
    unknown = [op for op in params.get("only_ops", []) if op not in {s.name for s in all_ops()}]
    if unknown:
        raise UsageError(f"unknown operator(s) {unknown}: see `dlcfuzz ops`")


def minimal_optimization_set(backend: Backend, v: Verdict, reference: Config, optimized: Config,
                             shows: Callable[[Config], bool]) -> tuple[Config, list[str]] | None:
    """The optimized configuration reduced to the smallest optimization set that still shows `v`, and
    that set; (optimized, []) when none is needed; None when it cannot tell: the reduced set does not
    show the finding again (a nondeterministic finding, or the reduction budget ran out), where ddmin
    would otherwise return every optimization (an onnxruntime 1.20.1 campaign keyed an uninitialized
    ReverseSequence output with all 61 transformers)."""
    if v.category == C.WRONG_RESULT and reference.name in v.configs:
        return optimized, []  # the unoptimized build is wrong too: a kernel's bug, no optimization needed
    minimized, opts = backend.minimize_config(optimized, shows)
    if opts and not shows(minimized):
        return None
    return minimized, opts


def observations_of_set(observations: list[Observation], index: int) -> list[Observation]:
    """The observations of input set `index`, in configuration order: a configuration's run on that set, or
    its one observation of set 0 when it failed before running (its compile stands for every set)."""
    ran = {o.config for o in observations if o.input_set == index}
    return [o for o in observations if o.input_set == index or (o.input_set == 0 and o.config not in ran)]


class GraphStrategy(Strategy):
    """A differential test of one generated graph: every configuration against the reference."""

    regenerable = True
    # whether its tests are drawn for door configurations (`door_for`): a strategy whose configurations never
    # hold one (oatest's are the baseline's front door) does not pay for their probes
    draws_for_doors = True

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.supported: Any = lambda op, dt: True
        self.capable: Any = lambda op, dt: True  # what the compiler has kernels for, opsets aside (start())
        # graphs kept at the default ONNX opset, and graphs that may raise it (see start()): one is
        # picked per test; `supported` admits what both admit
        self.variants: list[Any] = []
        self._choices: dict[tuple[int, str | None], Any] = {}
        # door configuration (Backend.door_configs) -> what its front door imports, probed apart
        self.doors: dict[str, Any] = {}
        # dedup key -> (the finding's configurations minimized, the minimal optimization set): its
        # reproducer compiles with exactly that set (the last few keys: duplicates are never written)
        self.minimal_configs: dict[str, tuple[list[Config], list[str]]] = {}
        self.edges: EdgeValues | None = None  # the edge values of the last test made (bench/value_space.py's measure)

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        check_graph_params(params)

    def start(self, pool: Pool, resumed: bool) -> None:
        """One-operator capability probe of the baseline configuration (cached per compiler version:
        what the compiler supports at all; what an optimized build fails on is what campaigns look for,
        and probing every configuration cost Inductor ~530 compiles); documented compiler gaps (the
        backend's allow-list with upstream reasons) are left out so new bugs stand out."""
        from dlcfuzz.strategies.probe import load_or_probe, opset_raisers

        backend = self.ctx.backend
        caps = load_or_probe(pool, backend, self.ctx.configs[:1], log=self.ctx.log)

        def alone(op: str, dt: str) -> bool:
            return caps.get((op, dt), (True, ""))[0] and dt not in backend.known_gaps(op)

        self.supported, self.capable, self.variants, self._choices = alone, alone, [], {}
        self.doors = self.probe_doors(pool, caps)
        if not backend.lowers_through_onnx:
            return
        # an operator newer than the default opset raises the whole model's opset, and an older operator
        # at a newer opset may have no kernel: such pairs never meet in one graph
        top = load_or_probe(pool, backend, self.ctx.configs[:1], log=self.ctx.log, beside_newest=caps)
        raisers = opset_raisers()
        low_only = frozenset(k for k, (ok, _) in top.items() if not ok and caps.get(k, (True, ""))[0])
        if not low_only or not any(alone(op, dt) for op, dt in raisers):
            return
        self.variants = [lambda op, dt: alone(op, dt) and (op, dt) not in raisers,
                         lambda op, dt: alone(op, dt) and (op, dt) not in low_only]
        self.supported = lambda op, dt: alone(op, dt) and (op, dt) not in raisers and (op, dt) not in low_only

    def probe_doors(self, pool: Pool, caps: Any) -> dict[str, Any]:
        """What each door configuration (`Backend.door_configs`) a test of this campaign may compare imports, probed
        through that configuration among the pairs the baseline takes (cached like the baseline's probe): a
        capability predicate per door. None to probe where the user's --configs hold no door (or the door is the
        baseline, whose probe already says)."""
        from dlcfuzz.strategies.probe import load_or_probe

        backend, baseline = self.ctx.backend, self.ctx.configs[0]
        every = backend.configs()
        names = [n for n in backend.door_configs() if self.draws_for_doors and n in every and n != baseline.name
                 and (not self.ctx.configs_picked or any(c.name == n for c in self.ctx.configs))]
        doors = {}
        for name in names:
            door = load_or_probe(pool, backend, [every[name]], log=self.ctx.log, among=(baseline, caps))
            doors[name] = lambda op, dt, door=door: door.get((op, dt), (False, ""))[0]
        return doors

    def door_for(self, seed: int) -> str | None:
        """The door configuration test `seed` is drawn for, or None: with --configs, the door they hold (every
        test); else one by its share (`Backend.door_configs`), from a stream of its own (a compiler without
        doors draws every other choice as it always has)."""
        if not self.doors:
            return None
        if self.ctx.configs_picked:
            return next((c.name for c in self.ctx.configs if c.name in self.doors), None)
        u, edge = float(np.random.default_rng([seed, 0xD004]).random()), 0.0
        for name, share in self.ctx.backend.door_configs().items():
            edge += share
            if name in self.doors and u < edge:
                return name
        return None

    def with_door(self, configs: list[Config], door: str | None) -> list[Config]:
        """`configs` comparing the door configuration `door` too (None: as they are)."""
        if door is None or any(c.name == door for c in configs):
            return configs
        return [*configs, self.ctx.backend.configs()[door]]

    def pick(self, rng: np.random.Generator | None = None, door: str | None = None) -> tuple[Any, Any]:
        """The capability predicate and (operator, dtypes) choices of one test: with `rng`, one of the
        variants when there are several; without, what every variant admits; with `door` (a door
        configuration the test compares), only what that door imports too."""
        k = int(rng.integers(len(self.variants))) if rng is not None and len(self.variants) > 1 else -1
        through = self.through_door(door)
        supported = through(self.variants[k] if k >= 0 else self.supported)
        if (k, door) not in self._choices:
            try:
                self._choices[(k, door)] = self.allowed(supported, door)
            except ValueError:  # --only-ops names operators of one side only: the other side has none
                if k < 0:
                    raise
                self._choices[(k, door)] = self.allowed(through(self.supported if k == 0 else self.variants[0]), door)
        return supported, self._choices[(k, door)]

    def through_door(self, door: str | None) -> Callable[[Any], Any]:
        """Capability predicate -> what it admits that door configuration `door` imports too (None: itself)."""
        if door is None:
            return lambda supported: supported
        takes = self.doors[door]
        return lambda supported: lambda op, dt: supported(op, dt) and takes(op, dt)

    def choices(self, rng: np.random.Generator | None = None, door: str | None = None) -> Any:
        return self.pick(rng, door)[1]

    def allowed(self, supported: Any, door: str | None = None) -> Any:
        """The (operator, dtypes) choices `supported` admits, each operator sampling around the compiler's
        known form gaps (an operator form it lacks: a dtype combination, an attribute form) and, with `door`,
        around that door configuration's own (`Backend.door_form_gaps`)."""
        from dlcfuzz.gen.random import allowed_choices, avoiding_choices
        from dlcfuzz.ops import get_op

        only = [get_op(n) for n in self.params.get("only_ops", [])] or None
        backend = self.ctx.backend
        gaps = backend.known_form_gaps if door is None else \
            (lambda op: [*backend.known_form_gaps(op), *backend.door_form_gaps(door, op)])
        return avoiding_choices(allowed_choices(only, None, supported), gaps)

    def test_case(self, g: Graph, inputs: dict[str, np.ndarray], seed: int, configs: list[Any] | None = None,
                  meta: dict[str, Any] | None = None) -> TestCase:
        meta = dict(meta or {})
        if self.params.get("values", VALUES.default) != "edge":  # the extra input sets stay small too
            meta["values"] = self.params["values"]
        return TestCase(g, inputs, list(configs if configs is not None else self.ctx.configs), seed=seed,
                        compiler=self.ctx.compiler, strategy=self.name, meta=meta, input_sets=self.ctx.input_sets)

    def with_regions(self, g: Graph, seed: int, supported: Any, wrap: Callable[..., Graph | None] | None = None
                     ) -> Graph:
        """`g` with node ranges wrapped in regions (gen/regions.py) in a `--regions` share of tests, drawn from a
        stream of the seed's own (a test without regions is the graph it was before regions existed). `wrap`: how
        the strategy places them, wrap(g, rng, kinds, supported) -> the graph, or None to leave it as it is (default:
        gen/regions.add_regions, random ranges)."""
        share = float(self.params.get("regions", REGIONS.default))
        kinds = self.region_kinds() if share > 0 else ()
        if not kinds:
            return g
        rng = np.random.default_rng([seed, REGION_STREAM])
        if rng.random() >= share:
            return g
        from dlcfuzz.gen.regions import add_regions

        wrapped = (wrap or add_regions)(g, rng, kinds=kinds, supported=supported)
        return g if wrapped is None else wrapped

    def region_kinds(self) -> tuple[str, ...]:
        """The region kinds the compiler's baseline configuration lowers (asked once, by lowering one sample
        of each: a target without a kind's rule documents it as a gap)."""
        if not hasattr(self, "_region_kinds"):
            from dlcfuzz.gen.regions import lowered_kinds

            self._region_kinds = lowered_kinds(self.ctx.backend, self.ctx.configs[0])
        return self._region_kinds

    def with_inputs(self, g: Graph, rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        """Inputs sampled in the operators' domains, edge values on a share of tests (`--values edge`, the
        default), the graph repaired so that computed values reaching a domain-restricted operator stay in
        its domain, and edge values shrunk where they leave the reference's exact range (gen/repair.py)."""
        from dlcfuzz.gen.repair import sample_values

        g, inputs, self.edges = sample_values(g, rng, self.params.get("values", VALUES.default))
        return g, inputs

    def test(self, seq: int, tc: TestCase, coverage: list[str] | None = None) -> Test:
        return Test(seq, tc.seed, tc.to_bytes(), tc, list(coverage or ()))

    def decode(self, blob: bytes) -> TestCase:
        return TestCase.from_bytes(blob)

    def restore(self, seq: int) -> None:
        """The coverage as it was when test `seq` was made (items of earlier tests)."""
        from dlcfuzz.gen.coverage import Coverage

        self.ctx.coverage = Coverage(self.ctx.store.coverage(before_test=seq + 1))

    def fingerprint(self, test: Test) -> bytes:
        import json

        from dlcfuzz.ir import dumps

        tc: TestCase = test.payload
        return dumps(tc.graph) + json.dumps([c.to_json() for c in tc.configs], sort_keys=True).encode()

    def size(self, test: Test) -> int:
        return len(test.payload.graph.nodes)

    # ---- judging -------------------------------------------------------
    def judge(self, test: Test, res: TaskResult) -> Judgement:
        tc: TestCase = test.payload
        if res.status != "ok":
            j = judgement_of_failure(tc.compiler, res, self.native_frames)
            reason = failure_reference_reason(tc)  # deterministic: the input sets the dead worker used
            if reason in UNDEFINED_BEHAVIOUR:  # e.g. a SIGFPE on a generated zero divisor
                j.verdicts = [Verdict("unknown", reason)]
            elif reason:
                j.verdicts.append(Verdict("unknown", reason))
            return j
        observations, _, r, new_inputs = reply_from_bytes(res.payload)
        if new_inputs is not None:
            tc.inputs = new_inputs
        sets = [(tc.inputs, Reference(**r))] + [(inputs, Reference(**ref)) for ref, inputs in reply_more_sets(res.payload)]
        verdicts, deciding = self.judge_sets(tc, sets, observations)
        shows = deciding > 0 and any(v.kind == "bug" for v in verdicts)
        if shows:  # the set that shows a bug becomes the test's inputs: reduction, replay and the reproducer use it
            tc.inputs = sets[deciding][0]
        blob = tc.to_bytes() if new_inputs is not None or shows else None
        coverage = reply_coverage(res.payload) if self.ctx.backend.collects_coverage else []
        return Judgement(verdicts, observations, any(ob.status == "ok" for ob in observations), coverage, blob=blob,
                         compiler_s=sum(ob.compile_s + ob.run_s for ob in observations),
                         applied=sorted({a for ob in observations for a in ob.info.get("applied", ())}))

    def judge_sets(self, tc: TestCase, sets: list[tuple[dict[str, np.ndarray], Reference]],
                   observations: list[Any]) -> tuple[list[Verdict], int]:
        """Each input set judged against its reference, in order: the first set that shows a bug decides
        (an unknown of another set, a non-finite reference say, hides no bug); else the first set that
        passes; else set 0 (an unknown of the compile, such as an expected error, is every set's).
        Returns the deciding set's verdicts, which carry its index, and the index."""
        first: list[Verdict] = []
        passed = None
        for index, (inputs, ref) in enumerate(sets):
            one = tc if index == 0 else TestCase(tc.graph, inputs, tc.configs, seed=tc.seed, compiler=tc.compiler)
            verdicts = self.differential(one, ref, observations_of_set(observations, index))
            for v in verdicts:
                v.input_set = index
            if any(v.kind == "bug" for v in verdicts):
                return verdicts, index
            if index == 0:
                first = verdicts
            if passed is None and all(v.kind == "pass" for v in verdicts):
                passed = verdicts, index
        return passed or (first, 0)

    def differential(self, tc: TestCase, ref: Reference, observations: list[Any]) -> list[Verdict]:
        if ref.reason in UNDEFINED_BEHAVIOUR:  # every output or error is legal
            return [Verdict("unknown", ref.reason)]
        expected = self.ctx.backend.expected_error
        verdicts = judge(tc.compiler, expected, ref.outputs, observations, ref.unstable, self.native_frames)
        if ref.outputs is not None and any(v.category in NUMERIC for v in verdicts):
            ref.unstable = unstable_outputs(tc, ref.outputs)  # only now: it costs a second evaluation
            verdicts = judge(tc.compiler, expected, ref.outputs, observations, ref.unstable, self.native_frames,
                             other_reading_outputs(tc))
        verdicts = documented_limits(tc, verdicts, self.ctx.backend.documented_limitation)
        verdicts = invalid_rejections(tc, verdicts, self.ctx.backend.front_door)
        if ref.reason in IMPLEMENTATION_DEFINED:
            # NaN/Inf handling, float->int of NaN, saturation on overflow: compilers may differ there
            verdicts = [v for v in verdicts if v.category not in NUMERIC]
        if ref.reason:
            verdicts.append(Verdict("unknown", ref.reason))
        elif ref.unstable:
            verdicts.append(Verdict("unknown", C.ILL_CONDITIONED_OUTPUT))
        return verdicts

    # ---- findings ------------------------------------------------------
    def early_key(self, test: Test, v: Verdict) -> str | None:
        return None if v.category in NUMERIC else v.key

    def still_fails(self, tc: TestCase, v: Verdict) -> Any:
        """Predicate over candidate (graph, inputs): compiled by the finding's configurations in the
        reducer pool, does it still show finding `v`?"""
        compiler, backend, frames = tc.compiler, self.ctx.backend, self.native_frames

        def predicate(g: Graph, inputs: dict[str, np.ndarray]) -> bool:
            cand = TestCase(g, inputs, [c for c in tc.configs if c.name in v.configs] or tc.configs,
                            seed=tc.seed, compiler=compiler)
            res = self.ctx.reducer_pool().run(cand.to_bytes())
            if res.status == "ok":
                obs, _, r, new_inputs = reply_from_bytes(res.payload)
                # a disruptive test's pool replies without a reference (an invalid graph has no semantics): its
                # configurations are compared with each other
                reason, outputs = (r["reason"], r["outputs"]) if r is not None else (None, None)
                if reason in UNDEFINED_BEHAVIOUR or (reason in IMPLEMENTATION_DEFINED and v.category in NUMERIC):
                    return False
                got = judge(compiler, backend.expected_error, outputs, obs, native_frames=frames)
                if outputs is not None and any(x.category in NUMERIC for x in got):
                    cand.inputs = new_inputs or cand.inputs
                    got = judge(compiler, backend.expected_error, outputs, obs, unstable_outputs(cand, outputs),
                                frames, other_reading_outputs(cand))
                    got = documented_limits(cand, got, backend.documented_limitation)
                got = invalid_rejections(cand, got, backend.front_door)
            elif res.status == "error":
                return False
            elif failure_reference_reason(cand) in UNDEFINED_BEHAVIOUR:  # a cut that divides by zero: legal to die
                return False
            else:
                got = [crash_verdict(compiler, res.status, res.error or res.status, res.progress, res.stderr_tail or "",
                                     frames)]
            if v.category in NUMERIC:  # cutting may make the reference usable (an inconsistency becomes a
                # wrong result of one of the configurations) or unusable (the reverse): same finding, as long as
                # it differs the same way (shape, dtype, nan, inf, value): a cut that trades the finding's
                # difference for another bug's reduces to that other bug (issue 40's OpenVINO finding 76: an
                # Exp's NaN read as inf, a registered bug, cut down to a Scan's wrong shape, another one)
                # (a key without a reason, e.g. a metamorphic finding's whose candidates are judged differentially,
                # keeps any numeric difference)
                reason = numeric_reason(v.key)
                return any(x.kind == "bug" and x.category in NUMERIC and reason in (None, numeric_reason(x.key))
                           for x in got)
            return any(x.kind == "bug" and x.category == v.category and x.key == v.key for x in got)

        return predicate

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        from dlcfuzz.reduce.graph import reduce_graph
        from dlcfuzz.reduce.sizes import longest_axis, shrink_axes, shrink_values

        tc: TestCase = test.payload
        budget = self.ctx.budget
        still_fails = self.still_fails(tc, v)
        # every value small first (one check): an edge value may absorb the difference in smaller graphs
        g, inputs = shrink_values(tc.graph, tc.inputs, still_fails, budget, tc.seed, only_all_small=True)
        g, inputs = reduce_graph(g, inputs, still_fails, budget=budget)
        # then the smallest extents and the fewest test values that still show it, on the same budget
        g, inputs = shrink_axes(g, inputs, still_fails, budget)
        g, inputs = shrink_values(g, inputs, still_fails, budget, tc.seed)
        if not (graphs_equal(g, tc.graph) and inputs.keys() == tc.inputs.keys()
                and all(np.array_equal(a, tc.inputs[k], equal_nan=True) for k, a in inputs.items())):
            # the reduced test must show it on its own, not thanks to what earlier checks left in their worker
            kept = self.unless_shown_fresh(test, v, lambda: still_fails(g, inputs))
            if kept is not None:
                return kept
        red = self.reduction(test, v, g, inputs)
        before, after = longest_axis(tc.graph), longest_axis(g)
        if after < before:
            red.summary += f", longest axis {before} -> {after}"
        if len(g.nodes) == len(tc.graph.nodes) > 1 and budget.stopped is None and not still_fails(g, inputs):
            red.not_minimal = ("it did not show again when its test was re-run alone (flaky, or it depends on "
                               "the state of the worker that found it)")
        return red

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        return self.reduction(test, v, test.payload.graph, test.payload.inputs)

    def numeric_key(self, test: Test, v: Verdict, g: Graph, inputs: dict[str, np.ndarray]) -> str:
        """A numeric finding is identified by its configurations and the operators left after reduction,
        and, where the compiler can say, by the minimal optimization set that still shows it."""
        key = with_option(v.key, "ops", ','.join(sorted(g.ops_used())))
        if self.ctx.budget.stopped is not None:
            return key
        return self.minimal_set_key(test.payload, g, inputs, v, key)

    def minimal_set_key(self, tc: TestCase, g: Graph, inputs: dict[str, np.ndarray], v: Verdict, key: str) -> str:
        """Category, compiler and configurations with the minimal optimization set (ORT transformers,
        Relax passes, Inductor knobs, HLO passes) that still shows the finding (`|opts=A,B`), whatever
        the operators or the message (OATest's dedup); `key|opts=none` when no optimization is needed;
        `key` when the compiler cannot minimize or the finding is not between two configurations."""
        from dlcfuzz.backends.base import BackendBase

        backend = self.ctx.backend
        configs = [c for c in tc.configs if c.name in v.configs]
        if len(configs) != 2 or type(backend).minimize_config is BackendBase.minimize_config:
            return key
        reference, optimized = configs  # in the test's order: the unoptimized build first
        shows = self.shows(tc, v)
        found = minimal_optimization_set(backend, v, reference, optimized,
                                         lambda cand: shows(g, inputs, [reference, cand]))
        if found is None:
            return key
        minimized, opts = found
        if not opts:
            return with_option(key, "opts", "none")
        # tagged with the category itself (not its row's key tag): stored keys of this form stay as they are
        key = str(DedupKey(v.category, tc.compiler, (','.join(sorted(v.configs)),)).with_option("opts", ','.join(opts)))
        self.minimal_configs = {**dict(list(self.minimal_configs.items())[-7:]), key: ([reference, minimized], opts)}
        return key

    def shows(self, tc: TestCase, v: Verdict) -> Any:
        """Predicate over (graph, inputs, [reference, candidate configuration]): the candidate still
        shows a finding of `v`'s kind."""
        backend = self.ctx.backend

        def shows(cand: Graph, cand_inputs: dict[str, np.ndarray], pair: list[Any]) -> bool:
            if not self.ctx.budget.take():
                return False
            t = TestCase(cand, dict(cand_inputs), pair, seed=tc.seed, compiler=tc.compiler)
            res = self.ctx.reducer_pool().run(t.to_bytes())
            if res.status != "ok":
                return False
            obs, _, r, _ = reply_from_bytes(res.payload)
            got = judge(tc.compiler, backend.expected_error, r["outputs"] if r else None, obs, r["unstable"] if r else (),
                        self.native_frames)
            same = NUMERIC if v.category in NUMERIC else (v.category,)
            return any(x.kind == "bug" and x.category in same and pair[1].name in x.configs for x in got)

        return shows

    def reduction(self, test: Test, v: Verdict, g: Graph, inputs: dict[str, np.ndarray],
                  untyped_outputs: tuple[str, ...] = (), note: str = "", configs: list[Config] | None = None) -> Reduction:
        """`note`: lines reduced.txt adds below the graph (what the lowered model holds beside it); `configs`:
        the reproducer's configurations (default: the test's that the verdict names)."""
        tc: TestCase = test.payload
        key = self.numeric_key(test, v, g, inputs) if v.category in NUMERIC else v.key
        configs = configs or [c for c in tc.configs if c.name in v.configs] or tc.configs

        def write(f: Finding) -> str:
            # the script compares with the reference where it can: reduction may turn an inconsistency
            # into a wrong result of every configuration (an ORT 1.20.1 ReverseSequence finding whose
            # script compared two configurations that agreed, both wrong); an inconsistency whose
            # reference has an ill-conditioned output compares the configurations only
            expected = None
            if v.category in NUMERIC:
                ref = reference_of(TestCase(g, dict(inputs), configs, seed=tc.seed), tries=1,
                                   stability=v.category != C.WRONG_RESULT)
                if v.category == C.WRONG_RESULT or not ref.unstable:
                    expected = ref.outputs
            script_configs, detail = configs, v.detail
            if f.key in self.minimal_configs:  # compile with the minimal optimization set, and say so
                script_configs, opts = self.minimal_configs[f.key]
                detail = (f"The smallest set of optimizations that shows it: {', '.join(opts)} "
                          f"(CONFIGS[{script_configs[1].name!r}] enables only these).\n{detail}")
            elif DedupKey.parse(f.key).option("opts") == "none":
                detail = ("None of the optimizations dlcfuzz can switch off is needed to show it: the difference "
                          f"lies in a kernel or in an optimization outside that list.\n{detail}")
            script = self.ctx.backend.reproducer(g, inputs, expected, script_configs, v.category, f.title, detail,
                                                 untyped_outputs=untyped_outputs)
            (f.folder / "repro.py").write_text(script)
            save(tc.graph, f.folder / "original.json")
            save(g, f.folder / "reduced.json")
            np.savez(f.folder / "reduced_inputs.npz", **inputs)
            (f.folder / "reduced.txt").write_text(to_text(g) + "\n" + (note + "\n" if note else ""))
            return script

        def opinion() -> SecondOpinion | None:
            return second_opinion(self.ctx, tc, v, g, inputs, tc.configs)  # all compared: their outputs are read

        return Reduction(key, len(tc.graph.nodes), len(g.nodes), write,
                         f"reduced {len(tc.graph.nodes)} -> {len(g.nodes)} nodes", not_minimal=self.ctx.budget.stopped,
                         second_opinion=opinion)


class RandomStrategy(GraphStrategy):
    """Uniform operator/dtype choice, deep data flow when a value fits (the baseline)."""

    name = "random"
    summary = "uniform operator/dtype choice (the baseline)"
    options = (OPS, ONLY_OPS, VALUES, SIZES, REGIONS)

    def make_test(self, seq: int, seed: int) -> Test:
        from dlcfuzz.gen.random import generate
        from dlcfuzz.gen.sizes import draw_sizes

        rng = np.random.default_rng(seed)
        sizes = draw_sizes(rng, self.params.get("sizes", "mixed"))
        door = self.door_for(seed)
        supported, choices = self.pick(rng, door)
        g = generate(rng, self.params["ops"], choices=choices, sizes=sizes)
        g = self.with_regions(g, seed, supported)
        g, inputs = self.with_inputs(g, rng)
        return self.test(seq, self.test_case(g, inputs, seed, self.with_door(list(self.ctx.configs), door)))

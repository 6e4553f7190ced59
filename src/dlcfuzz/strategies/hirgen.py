"""HirGen (ISSTA 2023): coverage-guided graph generation, sub-functions, per-test cross-method
configurations; its ablation `hirgen-random`; and the disruptive mode (graphs that break one
type/shape rule on purpose and must be rejected)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import UsageError
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.testcase import TestCase, reply_from_bytes
from dlcfuzz.oracle.verdict import TWIN, Verdict, judge_rejection
from dlcfuzz.strategies.base import LAG, Context, Judgement, Option, Reduction, Test, judgement_of_failure
from dlcfuzz.strategies.graph import ONLY_OPS, OPS, REGIONS, SIZES, VALUES, GraphStrategy

if TYPE_CHECKING:
    from dlcfuzz.exec.pool import Pool, TaskResult
    from dlcfuzz.gen.inputs import EdgeValues
    from dlcfuzz.gen.sizes import SizeProfile

P_OUTLINE = 0.7  # share of graphs whose node ranges become sub-functions (compilers that have them)
MODES = ("strict", "disruptive")
MALFORMED = "malformed:"  # disruptive_rules() entries naming a mutate/malformed.py kind, applied to the ONNX model
P_MALFORMED = 0.5  # share of disruptive tests that are malformed models, where the backend offers kinds
# A disruptive test whose rejection is checked against its broken node (its legal twin runs where a configuration
# rejects it): every test of an (operator, rule, dtype) the campaign has not covered yet, and this share of the rest
# (a twin costs one more compile of each rejecting configuration).
P_TWIN = 0.25
DISRUPTIVE_HANDLER = "dlcfuzz.strategies.hirgen:make_disruptive_handler"
MODE = Option("mode", "strict", "strict: valid graphs; disruptive: each graph breaks one type/shape rule and must "
              "be rejected")
FEEDBACKS = ("on", "measure", "off")
# off by default: at equal time (bench/inductor_coverage.py, 300 s) feedback reached 0.98x the Inductor lines of
# the ablation, and collecting coverage turns Inductor's compile caches off
FEEDBACK = Option("feedback", "off", "compiler-coverage feedback, where the compiler measures its own code coverage "
                  "(a backend that `collects_coverage`): on; measure (collected and reported, not used: the ablation); off (not collected)")
# Compiler-coverage feedback: a test whose compile reached compiler code no earlier test reached is kept; later
# tests grow, with probability P_GROW, from a random prefix of a kept graph (the AFL idea on graphs). A test uses
# only what tests at least LAG numbers before it taught, folded in test order, so the corpus is the same whatever
# --jobs and the timing; a grown test keeps its blob (its kept parent is not rebuilt on replay).
P_GROW = 0.5
KEPT_MAX = 64  # the most recent kept graphs


class HirgenStrategy(GraphStrategy):
    """Up to GUIDED_CANDIDATES operator instances scored by the coverage they add at each step."""

    name = "hirgen"
    summary = "coverage-guided generation (HirGen)"
    options = (OPS, ONLY_OPS, VALUES, MODE, FEEDBACK, SIZES, REGIONS)
    candidates: int | None = None  # None: hirgen's GUIDED_CANDIDATES

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        backend = ctx.backend
        self.feedback = (ctx.params.get("feedback", FEEDBACK.default) == "on" and ctx.params.get("mode") != "disruptive"
                         and backend is not None and backend.collects_coverage)
        self.kept: list[tuple[int, Graph]] = []  # (test number, graph) of tests that reached new compiler code
        self.compiler_seen: set[str] = set()  # compiler items folded so far (in test order)
        self.in_flight: set[int] = set()  # tests made, not yet judged
        self.unfolded: dict[int, tuple[Graph, list[str]]] = {}  # judged, waiting for earlier tests

    def __new__(cls, ctx: Context) -> HirgenStrategy:
        if ctx.params.get("mode") == "disruptive" and not issubclass(cls, DisruptiveHirgen):
            kind = DisruptiveHirgenRandom if cls is HirgenRandomStrategy else DisruptiveHirgen
            return super().__new__(kind)
        return super().__new__(cls)

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        super().validate(params, compiler)
        if params.get("mode") not in MODES:
            raise UsageError(f"unknown mode {params.get('mode')!r} (choose from {', '.join(MODES)})")
        if params.get("feedback", FEEDBACK.default) not in FEEDBACKS:
            raise UsageError(f"unknown feedback {params.get('feedback')!r} (choose from {', '.join(FEEDBACKS)})")
        if params.get("mode") == "disruptive":
            from dlcfuzz.backends import get_backend

            if get_backend(compiler).disruptive_rules() == ():
                raise UsageError(f"--mode disruptive: no type or shape rule binds {compiler}'s front door "
                                 "(its documented promotion makes such graphs valid), so there is nothing to test")

    def make_test(self, seq: int, seed: int) -> Test:
        from dlcfuzz.gen.coverage import graph_items
        from dlcfuzz.gen.hirgen import GUIDED_CANDIDATES, generate_guided, guided_regions
        from dlcfuzz.gen.sizes import draw_sizes

        rng = np.random.default_rng(seed)
        sizes = draw_sizes(rng, self.params.get("sizes", "mixed"))
        start, meta = self.grow_from(seq, seed)
        door = self.door_for(seed)
        supported, choices = self.pick(rng, door)
        candidates = GUIDED_CANDIDATES if self.candidates is None else self.candidates
        g = generate_guided(rng, self.params["ops"], self.ctx.coverage, choices, candidates=candidates, start=start,
                            sizes=sizes)
        g = self.with_regions(g, seed, supported, lambda g, rng, **kw: guided_regions(
            g, rng, self.ctx.coverage, candidates=candidates, **kw))
        g, inputs = self.with_inputs(g, rng)  # before outlining: the repair works on the main graph's nodes
        # functions, calls; not around regions (a Relax branch that calls a sub-function is not lowered)
        if self.ctx.backend.sub_functions and rng.random() < P_OUTLINE and not g.functions \
                and not any(n.bodies() for n in g.nodes):
            from dlcfuzz.gen.functions import outline

            g = outline(g, rng)
        if self.feedback:
            self.in_flight.add(seq)
        tc = self.test_case(g, inputs, seed, self.configs_for(rng, g, door), meta=meta)
        return self.test(seq, tc, list(graph_items(g)))

    # ---- compiler-coverage feedback ----------------------------------------
    def grow_from(self, seq: int, seed: int) -> tuple[Any, dict[str, Any] | None]:
        """A builder holding a kept graph's prefix (and the test's meta naming it), or (None, None): a
        fresh graph. Its own random stream, drawn whether or not anything is kept, so that a fresh test
        regenerates the same without the kept corpus."""
        from dlcfuzz.gen.random import GraphBuilder

        if not self.feedback:
            return None, None
        pick = np.random.default_rng([seed, 0x6B07])
        grow, u, v = pick.random() < P_GROW, pick.random(), pick.random()
        usable = [(s, g) for s, g in self.kept if s <= seq - LAG]
        if not grow or not usable:
            return None, None
        parent_seq, parent = usable[int(u * len(usable))]
        k = 1 + int(v * max(len(parent.nodes) - 1, 1))  # keep 1 .. n-1 nodes: the rest grows anew
        return GraphBuilder.from_prefix(np.random.default_rng([seed, 0x6B08]), parent, k), \
            {"grown_from": {"test": parent_seq + 1, "nodes": k}}

    def handler_init(self) -> dict[str, Any]:
        return {**super().handler_init(), "compiler_coverage": self.params.get("feedback", FEEDBACK.default) != "off"}

    def ready(self, seq: int) -> bool:
        """With feedback, a test waits until the tests LAG numbers before it are judged."""
        return not self.feedback or not self.in_flight or min(self.in_flight) > seq - LAG

    def learn(self, test: Test, j: Judgement, new: list[str]) -> None:
        super().learn(test, j, new)
        if self.feedback:
            self.unfolded[test.seq] = (test.payload.graph, j.coverage)
            self.settle(test.seq)

    def failed(self, seq: int) -> None:
        super().failed(seq)
        if self.feedback:
            self.settle(seq)

    def settle(self, seq: int) -> None:
        """Test `seq` is judged: fold, in test order, every judged test no test in flight precedes."""
        self.in_flight.discard(seq)
        first_open = min(self.in_flight, default=None)
        for s in sorted(self.unfolded):
            if first_open is not None and s > first_open:
                break
            g, items = self.unfolded.pop(s)
            fresh = [i for i in items if i not in self.compiler_seen]
            if fresh:
                self.compiler_seen.update(fresh)
                self.kept = [*self.kept, (s, g)][-KEPT_MAX:]

    def keeps_blob(self, test: Test) -> bool:
        return super().keeps_blob(test) or "grown_from" in test.payload.meta

    def start(self, pool: Pool, resumed: bool) -> None:
        super().start(pool, resumed)
        if self.feedback and resumed:  # the compiler items so far, and the campaign's corpus as the kept graphs
            from dlcfuzz.gen.coverage import is_compiler_item

            self.compiler_seen = {i for i in self.ctx.store.coverage() if is_compiler_item(i)}
            for test_id in sorted(self.ctx.store.corpus())[-KEPT_MAX:]:
                blob = self.ctx.store.test_blob(test_id)
                try:
                    self.kept.append((test_id - 1, self.decode(self.ctx.unwrap(blob)).graph))
                except Exception:  # noqa: BLE001 - under auto, another arm's test: not a graph of ours
                    continue

    def configs_for(self, rng: np.random.Generator, g: Graph, door: str | None = None) -> list[Any]:
        """HirGen's oracles per test: the campaign's pair, varied by the compiler (sampled pass
        sequences, function rewrites, another compilation method) unless the user picked them; with
        `door`, the door configuration the test was drawn for among them."""
        if self.ctx.configs_picked:
            return list(self.ctx.configs)
        configs = self.with_door(list(self.ctx.configs), door)
        return self.with_door(self.ctx.backend.per_test_configs(rng, g, configs), door)


class HirgenRandomStrategy(HirgenStrategy):
    """The same loop unguided (one candidate per step): HirGen's ablation."""

    name = "hirgen-random"
    summary = "hirgen without coverage guidance (ablation)"
    candidates = 1


class DisruptiveHirgen(HirgenStrategy):
    """Every graph breaks exactly one type or shape rule of one operator (confirmed by our spec and
    by ONNX's strict inference); every configuration must reject it. Output produced without an
    error is `accepted-invalid`; crashes and hangs are findings as always. A rejection is checked against the
    broken node by the test's legal twin (`twin_of`), run where a configuration rejects (P_TWIN)."""

    handler = DISRUPTIVE_HANDLER

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.counts["rejected"] = 0
        if not ctx.configs_picked:  # the configurations with the most distinct front doors
            every = ctx.backend.configs()
            self.configs = [every[n] for n in ctx.backend.disruptive_configs() if n in every] or list(ctx.configs)
        else:
            self.configs = list(ctx.configs)

    def handler_init(self) -> dict[str, Any]:
        return {**super().handler_init(), "invalid": True}

    def door(self) -> str | None:
        """The door configuration every test compares (the first of them), or None: a graph that breaks a rule
        must reach each front door's own checks, not stop at an importer that lacks one of its operators."""
        return next((c.name for c in self.configs if c.name in self.doors), None)

    def make_test(self, seq: int, seed: int) -> Test:
        from dlcfuzz.backends.base import Config
        from dlcfuzz.gen.disruptive import RULES, generate_disruptive
        from dlcfuzz.gen.sizes import draw_sizes

        rng = np.random.default_rng(seed)
        sizes = draw_sizes(rng, self.params.get("sizes", SIZES.default))
        rules = self.ctx.backend.disruptive_rules() or RULES
        forms = [r.removeprefix(MALFORMED) for r in rules if r.startswith(MALFORMED)]
        if forms and rng.random() < P_MALFORMED:
            test = self.malformed_test(seq, seed, rng, forms, sizes)
            if test is not None:
                return test
        g, inputs, broken = generate_disruptive(rng, self.ctx.coverage, self.choices(rng, self.door()),
                                                rules=tuple(r for r in rules if not r.startswith(MALFORMED)) or RULES,
                                                sizes=sizes)
        if self.params.get("values", VALUES.default) == "edge":
            self.edges = self.edge_values(g, inputs, broken.node, rng)
        configs = [Config(c.name, {**c.options, "untyped_outputs": [broken.output]}) for c in self.configs]
        tc = self.test_case(g, inputs, seed, configs, meta={"broken": broken.to_json(), **self.twin(rng, broken.item)})
        return self.test(seq, tc, [broken.item])

    @staticmethod
    def edge_values(g: Graph, inputs: dict[str, np.ndarray], broken_node: str, rng: np.random.Generator) -> EdgeValues:
        """Edge profiles (gen/inputs.edge_values) inside the domains of the valid nodes: the broken node's domain rules
        have no meaning for its broken types. No repair: a broken graph has no reference, its test judges rejection.
        Changes `inputs` and the graph's constants in place."""
        from dlcfuzz.gen.inputs import edge_values

        valid = Graph(g.inputs, g.constants, [n for n in g.nodes if n.name != broken_node], [], g.functions)
        return edge_values(valid, inputs, rng)

    def twin(self, rng: np.random.Generator, item: str) -> dict[str, bool]:
        """{"twin": True} when this test checks its rejection against its legal twin (see P_TWIN), else {}."""
        return {"twin": True} if item not in self.ctx.coverage or rng.random() < P_TWIN else {}

    def malformed_test(self, seq: int, seed: int, rng: np.random.Generator, forms: list[str],
                       sizes: SizeProfile | None = None) -> Test | None:
        """A valid generated graph (long axes where `sizes` is a long-axis test's profile) whose lowered ONNX model
        gets one malformed node (mutate/malformed.py): the configurations carry {"kind", "seed"} and the backend's
        lower() applies it."""
        from dlcfuzz.backends.base import Config
        from dlcfuzz.gen.coverage import DISRUPTIVE
        from dlcfuzz.gen.hirgen import generate_guided
        from dlcfuzz.lower.onnx import to_onnx
        from dlcfuzz.mutate.malformed import malform

        kind = forms[int(rng.integers(len(forms)))]
        g = generate_guided(rng, self.params["ops"], self.ctx.coverage, self.choices(rng, self.door()), sizes=sizes)
        g, inputs = self.with_inputs(g, rng)
        done = malform(to_onnx(g), kind, seed)
        if done is None:
            return None
        m = done[1]
        broken = {"op": m.op, "rule": MALFORMED + kind, "dtype": "float", "node": m.node, "output": m.output,
                  "why": f"{m.rule}: {m.detail}"}
        spec = {"kind": kind, "seed": seed}
        configs = [Config(c.name, {**c.options, "malformed": spec}) for c in self.configs]
        item = f"{DISRUPTIVE}|{m.op}|{MALFORMED}{kind}|float"
        tc = self.test_case(g, inputs, seed, configs, meta={"broken": broken, "malformed": spec, **self.twin(rng, item)})
        return self.test(seq, tc, [item])

    def judge(self, test: Test, res: TaskResult) -> Judgement:
        tc: TestCase = test.payload
        if res.status != "ok":
            return judgement_of_failure(tc.compiler, res, self.native_frames)  # no reference: the graph has no semantics
        observations, _, _, _ = reply_from_bytes(res.payload)
        broken = tc.meta["broken"]
        verdicts = judge_rejection(tc.compiler, broken, observations, self.per_op_rules, self.lenient(broken),
                                   self.ctx.backend.expected_error, self.native_frames)
        self.counts["rejected"] += verdicts[0].category == C.REJECTED
        return Judgement(verdicts, observations, any(ob.status == "ok" for ob in observations),
                         compiler_s=sum(ob.compile_s + ob.run_s for ob in observations))

    def lenient(self, broken: dict[str, str]) -> Callable[[str], str | None]:
        """config name -> why its front door documents accepting this broken form (e.g. Relax's numpy-style
        tile), or None."""
        by_name = {c.name: c for c in self.configs}

        def why(config: str) -> str | None:
            c = by_name.get(config)
            return None if c is None else self.ctx.backend.documented_leniency(c, broken["op"], broken["rule"])

        return why

    def per_op_rules(self, config: str) -> bool:
        c = next((c for c in self.configs if c.name == config), None)
        return c is None or self.ctx.backend.per_op_rules(c)

    def early_key(self, test: Test, v: Verdict) -> str | None:
        return v.key

    def still_fails(self, tc: TestCase, v: Verdict) -> Any:
        if v.category != C.ACCEPTED_INVALID:
            return super().still_fails(tc, v)
        broken = tc.meta["broken"]

        def predicate(g: Graph, inputs: dict[str, np.ndarray]) -> bool:
            cand = TestCase(g, inputs, [c for c in tc.configs if c.name in v.configs], seed=tc.seed,
                            compiler=tc.compiler, meta=tc.meta)
            res = self.ctx.reducer_pool().run(cand.to_bytes())
            return res.status == "ok" and any(
                x.category == C.ACCEPTED_INVALID and x.key == v.key
                for x in judge_rejection(tc.compiler, broken, reply_from_bytes(res.payload)[0], self.per_op_rules,
                                         self.lenient(broken)))

        return predicate

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        """The broken node alone, with fresh inputs, when that still shows the finding. A malformed node
        is added to the lowered ONNX model, not to the graph (the same node on any graph that offers it a
        float value to read): the graph around it is reduced as a whole."""
        from dlcfuzz.reduce.graph import isolate_node, reduce_graph

        tc: TestCase = test.payload
        broken = tc.meta["broken"]
        g, inputs = tc.graph, tc.inputs
        if v.category == C.UNEXPECTED_ERROR and tc.meta.get("twin"):
            return self.twin_reduction(test, v)
        if self.ctx.reduce and "malformed" in tc.meta:
            g, inputs = reduce_graph(tc.graph, tc.inputs, self.still_fails(tc, v), budget=self.ctx.budget)
        elif self.ctx.reduce:
            cand, cand_in = isolate_node(tc.graph, tc.inputs, broken["node"])
            if cand.nodes != g.nodes and self.still_fails(tc, v)(cand, cand_in):
                g, inputs = cand, cand_in
        return self.reduction(test, v, g, inputs, untyped_outputs=(broken["output"],), note=malformed_note(tc, g))

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        tc: TestCase = test.payload
        if v.category == C.UNEXPECTED_ERROR and tc.meta.get("twin"):
            return self.twin_reduction(test, v)
        return self.reduction(test, v, tc.graph, tc.inputs, untyped_outputs=(tc.meta["broken"]["output"],),
                              note=malformed_note(tc, tc.graph))

    def twin_reduction(self, test: Test, v: Verdict) -> Reduction:
        """A configuration that rejects the legal twin too: the finding is the twin, a valid graph the compiler
        fails on (not reduced further: the broken node's neighbourhood is what the rejection was about)."""
        tc: TestCase = test.payload
        twin = twin_of(tc)
        note = ("# the lowered ONNX model gets the legal twin of the malformed node planned for this test "
                f"({tc.meta['malformed']['kind']})" if "malformed" in tc.meta else "")
        return self.reduction(test, v, twin.graph, twin.inputs, note=note,
                              configs=[c for c in twin.configs if c.name in v.configs])

    def progress_fields(self) -> str:
        return f"rejected {self.counts['rejected']}"


def twin_of(tc: TestCase) -> TestCase:
    """The legal twin of a disruptive test: its malformed node planned legal (mutate/malformed.py), or its graph
    with the broken rule kept (gen/disruptive.py legal_twin), with configurations that expect a valid graph."""
    from dlcfuzz.backends.base import Config

    if "malformed" in tc.meta:
        spec = {**tc.meta["malformed"], "legal": True}
        configs = [Config(c.name, {**c.options, "malformed": spec}) for c in tc.configs]
        return TestCase(tc.graph, tc.inputs, configs, seed=tc.seed, compiler=tc.compiler, strategy=tc.strategy)
    from dlcfuzz.gen.disruptive import legal_twin

    g, inputs = legal_twin(tc.graph, tc.inputs, tc.meta["broken"], tc.seed)
    configs = [Config(c.name, {k: x for k, x in c.options.items() if k != "untyped_outputs"}) for c in tc.configs]
    return TestCase(g, inputs, configs, seed=tc.seed, compiler=tc.compiler, strategy=tc.strategy)


def make_disruptive_handler(init: dict) -> Callable[[bytes], bytes]:
    """Worker side of disruptive tests: the differential handler's (no reference: the graph has no semantics),
    and, for a test that asks for it ("twin" in its meta), its legal twin compiled and run by every configuration
    that rejected the test, observed as "twin:CONFIG"."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.pool import progress
    from dlcfuzz.exec.worker import make_handler, run_configs
    from dlcfuzz.oracle.testcase import observations_to_bytes

    plain = make_handler(init)  # imports the plug-ins too
    backend = get_backend(init["compiler"])
    version = backend.version()

    def handle(payload: bytes) -> bytes:
        tc = TestCase.from_bytes(payload)
        if not tc.meta.get("twin"):
            return plain(payload)
        obs = run_configs(backend, tc, progress, invalid=True)
        rejected = {o.config for o in obs if o.status == "error"}
        if rejected:
            twin = twin_of(tc)
            twin.configs = [c for c in twin.configs if c.name in rejected]
            obs += [replace(o, config=TWIN + o.config) for o in run_configs(backend, twin, progress)]
        return observations_to_bytes(obs, version)

    return handle


def malformed_note(tc: TestCase, g: Graph) -> str:
    """For reduced.txt: the malformed node the lowered model of `g` gets (it is not in the graph); "" for a
    test without one."""
    from dlcfuzz.lower.onnx import to_onnx
    from dlcfuzz.mutate.malformed import malform

    spec = tc.meta.get("malformed")
    if not spec:
        return ""
    done = malform(to_onnx(g), spec["kind"], int(spec["seed"]))
    if done is None:
        return ""
    model, m = done
    node = next(n for n in model.graph.node if n.name == m.node)
    return (f"# and, added to the lowered ONNX model (below dlcfuzz's IR): {m.node}: {node.op_type}"
            f"({', '.join(repr(i) for i in node.input)}) -> {', '.join(node.output)}\n"
            f"#   it breaks: {m.rule} ({m.detail})")


class DisruptiveHirgenRandom(DisruptiveHirgen):
    name = "hirgen-random"
    candidates = 1

"""MT-DLComp (Xiao et al. 2022): chains of semantics-preserving mutations of a real model, each
tenth mutant compiled next to its seed; label + score oracle; three-stage reduction."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz import reference
from dlcfuzz.errors import InternalError, UsageError
from dlcfuzz.ir import save, to_text
from dlcfuzz.ir.blob import blob_digest
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import DedupKey, dedup_key, with_option
from dlcfuzz.oracle.policy import reference_of
from dlcfuzz.oracle.testcase import Observation, TestCase, observations_to_bytes, reply_from_bytes
from dlcfuzz.oracle.verdict import Verdict, crash_verdict, judge_metamorphic
from dlcfuzz.strategies.base import Context, Finding, Judgement, Option, Reduction, Strategy, Test, judgement_of_failure
from dlcfuzz.strategies.graph import REGION_STREAM, REGIONS, VALUES

if TYPE_CHECKING:
    from dlcfuzz.exec.pool import TaskResult
    from dlcfuzz.gen.inputs import EdgeValues

STEPS_PER_TEST = 10  # MT-DLComp tests every tenth mutant ...
CHAIN_STEPS = 200  # ... of a chain M_k = mutate(M_k-1) this long (the paper: 1000; graphs grow by ~18 nodes a step
# and compile time with them), then starts again from the seed
HANDLER = "dlcfuzz.strategies.metamorphic:make_handler"
REDUCE_S = 180.0  # one finding's reduction budget (full-size mutants compile for seconds)
CHAINS_HELD = 8  # chains whose steps stay in memory for reduction; older ones are read back from the store
# A routine mutant's stored form: its test seed, its Mutant (with the steps new in it) and the digest
# of the whole test. A whole mutant is the seed model's graph grown by ~18 nodes a step (up to ~1.4 MB
# of blob late in a chain), while the steps that rebuild it from the seed take a few KB.
LIGHT = b"DLCFUZZ-MT-STEPS\n"
EDGE_STREAM = 0xED6E  # a chain's edge-value draws: a stream of the campaign seed and the chain's first test
SEED_RUNS_HELD = 16  # a worker's seed-model observations kept, per model, configuration and chain inputs


@dataclass
class Mutant:
    """The typed payload a metamorphic test carries: which chain, how many steps, the seed's weights
    it shares (left out of the stored test), the steps new in this test."""

    model: str
    model_seed: int
    shared: list[str]
    chain: int
    steps: int
    delta: float
    new_steps: list[dict[str, Any]] | None = None
    values: str = "small"  # `--values` of its chain: "edge" draws the chain's inputs with edge profiles

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        if self.new_steps is None:
            d.pop("new_steps")
        if self.values == "small":  # a mutant of --values small is stored as before profiles existed
            d.pop("values")
        return d

    @staticmethod
    def of(tc: TestCase) -> Mutant:
        return Mutant.from_json(tc.meta["metamorphic"])

    @staticmethod
    def from_json(d: dict[str, Any]) -> Mutant:
        return Mutant(d["model"], int(d["model_seed"]), list(d["shared"]), int(d["chain"]), int(d["steps"]),
                      float(d["delta"]), d.get("new_steps"), str(d.get("values", "small")))


def stored_mutant(blob: bytes) -> Mutant | None:
    """The Mutant a stored test carries, from its whole blob or its light one; None for a test that
    is no mutant."""
    if blob.startswith(LIGHT):
        return Mutant.from_json(json.loads(blob[len(LIGHT):])["metamorphic"])
    tc = TestCase.from_bytes(blob)
    return Mutant.of(tc) if "metamorphic" in tc.meta else None


@dataclass
class Chain:
    """The seed model, its small inputs (the zoo's standard-normal image) and the seed's values on them, and the
    chain being grown: its mutant, steps, first test, `--values` and the profile its PIOC steps read."""

    seed: Graph
    inputs: dict[str, np.ndarray]
    seed_profile: dict[str, np.ndarray]
    graph: Graph | None = None
    steps: list[Any] = field(default_factory=list)
    start: int = 0
    profile: dict[str, np.ndarray] = field(default_factory=dict)
    by_start: dict[int, list[Any]] = field(default_factory=dict)  # chain start -> its steps (reduction)
    values: str = "small"
    # (chain start, --values) -> the chain's inputs and the edge values they hold, for the CHAINS_HELD chains drawn last
    inputs_by_start: dict[tuple[int, str], tuple[dict[str, np.ndarray], EdgeValues]] = field(default_factory=dict)

    def hold(self, start: int, steps: list[Any]) -> None:
        """Keep the steps of the chain that began at test `start`, and of the CHAINS_HELD - 1 chains
        held before it (a campaign of days starts thousands of chains)."""
        self.by_start.pop(start, None)
        self.by_start[start] = steps
        while len(self.by_start) > CHAINS_HELD:
            del self.by_start[next(iter(self.by_start))]


class MetamorphicStrategy(Strategy):
    name = "metamorphic"
    summary = "semantics-preserving mutations of a zoo model (MT-DLComp)"
    handler = HANDLER
    options = (Option("model", "resnet18", "the zoo model to mutate (see `dlcfuzz zoo`)"),
               Option("delta", 1e-4, "score tolerance between a mutant and its seed", float), VALUES,
               REGIONS)  # a test's region step (regions_of)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._chain: Chain | None = None
        self.edges: EdgeValues | None = None  # the edge values of the last test's chain (bench/value_space.py's measure)

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        from dlcfuzz.strategies.graph import check_graph_params
        from dlcfuzz.zoo import ZOO

        check_graph_params(params)  # --values
        if params["model"] not in ZOO:
            raise UsageError(f"unknown model {params['model']!r} (choose from {', '.join(ZOO)}; see `dlcfuzz zoo`)")

    def chain(self) -> Chain:
        from dlcfuzz.zoo import build
        from dlcfuzz.zoo import sample_inputs as model_inputs

        if self._chain is None:
            seed = build(self.params["model"], self.ctx.seed)
            inputs = model_inputs(seed, self.ctx.seed)
            # PIOC profiles: the seed model's values on the small inputs, for every chain that has them
            # (start_chain profiles a chain with edge values on its own)
            self._chain = Chain(seed, inputs, reference.run(seed, inputs, keep_all=True))
        return self._chain

    def chain_inputs(self, start: int, values: str) -> dict[str, np.ndarray]:
        """The inputs of the chain that began at test `start`: the zoo's standard-normal image, and with values
        "edge" (`--values`, the default) edge profiles on a share of chains (gen/repair.edge_inputs: inside the seed
        model's domains, the model's weights kept, shrunk where the reference leaves its exact, finite range), drawn
        from a stream of the campaign seed and `start`, so that a resumed chain and a light mutant get them again.
        Per chain, not per test: a PIOC condition is zero for the inputs its chain profiled."""
        return self.chain_values(start, values)[0]

    def chain_values(self, start: int, values: str) -> tuple[dict[str, np.ndarray], EdgeValues]:
        """chain_inputs, and the edge values they hold."""
        from dlcfuzz.gen.inputs import EdgeValues
        from dlcfuzz.gen.repair import edge_inputs

        ch = self.chain()
        if values != "edge":
            return ch.inputs, EdgeValues()
        if (start, values) not in ch.inputs_by_start:
            inputs = {k: a.copy() for k, a in ch.inputs.items()}
            edges = edge_inputs(ch.seed, inputs, np.random.default_rng([self.ctx.seed, start, EDGE_STREAM]))
            ch.inputs_by_start[(start, values)] = (inputs if edges.profiles else ch.inputs), edges
            while len(ch.inputs_by_start) > CHAINS_HELD:
                del ch.inputs_by_start[next(iter(ch.inputs_by_start))]
        return ch.inputs_by_start[(start, values)]

    def start_chain(self, start: int, values: str) -> None:
        """The chain being grown begins at test `start` with `--values` `values`: its profile is the seed model's
        values on the chain's inputs (a profile taken mid-chain would also hold earlier steps' values, and a
        resumed chain would diverge)."""
        ch = self.chain()
        inputs = self.chain_inputs(start, values)
        ch.start, ch.values = start, values
        ch.profile = dict(ch.seed_profile) if inputs is ch.inputs else reference.run(ch.seed, inputs, keep_all=True)

    def make_test(self, seq: int, seed: int) -> Test:
        """The next mutant of the chain (STEPS_PER_TEST more steps). A resumed campaign rebuilds its
        last chain from the steps its tests recorded and goes on with it, exactly as the
        uninterrupted campaign would have."""
        from dlcfuzz.mutate.metamorphic import iterate, replay

        ch = self.chain()
        if ch.graph is None:
            last = next(self.ctx.own_blobs(self.ctx.store.blobs_before(seq)), None)
            mt = stored_mutant(last[1]) if last else None
            steps = self.chain_steps(mt.chain) if mt else None
            if steps is not None and 0 < len(steps) < CHAIN_STEPS:
                ch.graph, ch.steps = replay(ch.seed, steps, check=False), steps
                self.start_chain(mt.chain, mt.values)  # type: ignore[union-attr]
        if ch.graph is None or len(ch.steps) >= CHAIN_STEPS:
            ch.graph, ch.steps = ch.seed, []
            self.start_chain(seq, self.params.get("values", VALUES.default))
            ch.hold(seq, ch.steps)
        rng = np.random.default_rng(seed)
        inputs, self.edges = self.chain_values(ch.start, ch.values)
        g, new = iterate(ch.graph, rng, STEPS_PER_TEST, inputs, profile=ch.profile, regions=self.regions_of(seed))
        ch.graph = g
        ch.steps.extend(new)
        tc = self.mutant_test(g, seed, ch.start, len(ch.steps), new, ch.values)
        return Test(seq, seed, tc.to_bytes(), tc)

    def regions_of(self, seed: int) -> tuple[np.random.Generator, tuple[str, ...]] | None:
        """The random stream and region kinds of test `seed`'s region step, in a `--regions` share of tests (drawn
        from a stream of the seed's own: a test without one makes the mutant it made before regions existed)."""
        share = float(self.params.get("regions", REGIONS.default))
        kinds = self.region_kinds() if share > 0 else ()
        if not kinds:
            return None
        rng = np.random.default_rng([seed, REGION_STREAM])
        return (rng, kinds) if rng.random() < share else None

    def region_kinds(self) -> tuple[str, ...]:
        """The region kinds of a region step (if, loop) that the compiler's baseline configuration lowers."""
        if not hasattr(self, "_region_kinds"):
            from dlcfuzz.gen.regions import lowered_kinds
            from dlcfuzz.mutate.metamorphic import REGION_KINDS

            self._region_kinds = tuple(k for k in lowered_kinds(self.ctx.backend, self.ctx.configs[0])
                                       if k in REGION_KINDS)
        return self._region_kinds

    def chain_steps(self, start: int) -> list[Any] | None:
        """The steps of the chain that began at test `start`, from the steps each stored test of it
        recorded (None when a test lacks them: a store of an older dlcfuzz)."""
        from dlcfuzz.mutate.metamorphic import steps_from_json

        ch = self.chain()
        if ch.graph is not None and start == ch.start:  # the chain being grown: its tests may be in flight
            return ch.steps
        if start in ch.by_start:
            return ch.by_start[start]
        steps: list[Any] = []
        for _seq, blob in self.ctx.own_blobs(self.ctx.store.blobs_from(start)):
            mt = stored_mutant(blob)
            if mt is None or mt.chain != start:
                break
            if mt.new_steps is None:
                return None
            steps.extend(steps_from_json(mt.new_steps))
        ch.hold(start, steps)
        return steps

    def mutant_test(self, g: Graph, seed: int, start: int, n_steps: int, new_steps: list[Any] | None = None,
                    values: str = "small") -> TestCase:
        """A test case of mutant g of the chain that began at test `start` with `--values` `values` (its inputs:
        chain_inputs); the seed's weights are left out of it (the worker rebuilds the seed model from the zoo), so
        stored tests of full-size models stay small."""
        from dlcfuzz.mutate.metamorphic import steps_to_json

        base = self.chain().seed
        shared = [k for k, a in g.constants.items() if base.constants.get(k) is a]
        stored = g.light_copy()
        stored.constants = {k: a for k, a in g.constants.items() if k not in set(shared)}
        mt = Mutant(self.params["model"], self.ctx.seed, shared, start, n_steps, float(self.params["delta"]),
                    steps_to_json(new_steps) if new_steps is not None else None, values)
        return TestCase(stored, dict(self.chain_inputs(start, values)), list(self.ctx.configs), seed=seed,
                        compiler=self.ctx.compiler, strategy=self.name, meta={"metamorphic": mt.to_json()})

    def decode(self, blob: bytes) -> TestCase:
        return TestCase.from_bytes(blob)

    def light_blob(self, test: Test) -> bytes | None:
        tc: TestCase = test.payload
        mt = Mutant.of(tc)
        if mt.new_steps is None:  # a mutant of an older dlcfuzz's store: its steps are not recorded
            return None
        return LIGHT + json.dumps({"seed": tc.seed, "metamorphic": mt.to_json(),
                                   "digest": blob_digest(test.blob)}).encode()

    def is_light(self, blob: bytes) -> bool:
        return blob.startswith(LIGHT)

    def inflate(self, blob: bytes) -> bytes:
        """A light mutant rebuilt: the seed model, then the steps of its chain up to it (read from
        the tests of the chain before it), as `make_test` made it."""
        from dlcfuzz.mutate.metamorphic import replay

        if not blob.startswith(LIGHT):
            return blob
        d = json.loads(blob[len(LIGHT):])
        mt = Mutant.from_json(d["metamorphic"])
        steps = self.chain_steps(mt.chain)
        if steps is None or len(steps) < mt.steps:
            raise InternalError(f"the chain that began at test {mt.chain} holds {len(steps or [])} recorded steps, "
                                f"not the {mt.steps} of this mutant")
        g = replay(self.chain().seed, steps[:mt.steps], check=False)
        new = steps[mt.steps - len(mt.new_steps or []):mt.steps]
        whole = self.mutant_test(g, int(d["seed"]), mt.chain, mt.steps, new, mt.values).to_bytes()
        if blob_digest(whole) != d["digest"]:
            raise InternalError(f"the mutant rebuilt from the steps of chain {mt.chain} differs from the one that ran")
        return whole

    def size(self, test: Test) -> int:
        return len(test.payload.graph.nodes)

    def judge(self, test: Test, res: TaskResult) -> Judgement:
        tc: TestCase = test.payload
        if res.status != "ok":
            return judgement_of_failure(tc.compiler, res, self.native_frames)
        observations, _, _, _ = reply_from_bytes(res.payload)
        verdicts = judge_metamorphic(tc.compiler, observations, Mutant.of(tc).delta, self.native_frames)
        mutant = [ob for ob in observations if not ob.config.startswith("seed:")]
        return Judgement(verdicts, observations, any(ob.status == "ok" for ob in observations),
                         compiler_s=sum(ob.compile_s + ob.run_s for ob in mutant))

    def early_key(self, test: Test, v: Verdict) -> str | None:
        return None if v.category == C.METAMORPHIC else v.key

    # ---- reduction -----------------------------------------------------
    def mutant_fails(self, tc: TestCase, v: Verdict) -> Callable[[Graph], bool]:
        """Predicate over candidate mutants: compiled next to the seed model by the finding's
        configurations, does the candidate still show finding `v`?"""
        mt = Mutant.of(tc)
        configs = [c for c in tc.configs if c.name in v.configs] or tc.configs

        def fails(g: Graph) -> bool:
            if not self.ctx.budget.take():  # spent: keep what is left (still a finding)
                return False
            cand = self.mutant_test(g, tc.seed, mt.chain, mt.steps, values=mt.values)
            cand.configs = configs
            res = self.ctx.reducer_pool().run(cand.to_bytes())
            if res.status != "ok":  # a crash of the worker: the same crash?
                return res.status != "error" and v.key == crash_verdict(
                    tc.compiler, res.status, res.error or res.status, res.progress, res.stderr_tail or "",
                    self.native_frames).key
            got = judge_metamorphic(tc.compiler, reply_from_bytes(res.payload)[0], mt.delta, self.native_frames)
            return any(x.kind == "bug" and x.category == v.category and (v.category == C.METAMORPHIC or x.key == v.key)
                       for x in got)

        return fails

    def full_mutant(self, tc: TestCase) -> Graph:
        full = tc.graph.light_copy()
        seed = self.chain().seed
        full.constants = {**{k: seed.constants[k] for k in Mutant.of(tc).shared}, **tc.graph.constants}
        return full

    def reduce_steps(self, tc: TestCase, v: Verdict) -> Graph:
        """Stages 1 and 2: delta debugging over the mutation steps (each subset completed by its
        dependencies), then each kept step's opaque condition replaced by the constant it provably
        is (zeros) where the finding survives. Tests of an older dlcfuzz keep their full mutant."""
        from dlcfuzz.mutate.metamorphic import closure, constant_conditions, replay
        from dlcfuzz.reduce.ddmin import ddmin

        mt = Mutant.of(tc)
        steps = self.chain_steps(mt.chain)
        if steps is None or len(steps) < mt.steps:
            return self.full_mutant(tc)
        seed = self.chain().seed
        fails = self.mutant_fails(tc, v)
        steps = steps[:mt.steps]
        kept = ddmin(steps, lambda subset: fails(replay(seed, subset, check=False)),
                     close=lambda xs: closure(steps, [s.id for s in xs]),
                     max_checks=max(20, self.ctx.backend.reduction_checks // 2))
        return constant_conditions(replay(seed, kept), fails)

    def reduce_nodes(self, tc: TestCase, v: Verdict, mutant: Graph) -> tuple[Graph, dict[str, np.ndarray]] | None:
        """Stage 3: node-level reduction of the mutant alone. Every mutation leaves the reference
        output unchanged, so a mutant the compiler computes differently from its seed is one it
        computes differently from the reference interpreter: the differential oracle then drives
        `reduce_graph`. None when the mutant alone does not show a reducible failure."""
        from dlcfuzz.reduce.graph import reduce_graph
        from dlcfuzz.strategies.graph import RandomStrategy

        if v.category == C.METAMORPHIC:
            as_plain = Verdict("bug", C.WRONG_RESULT, v.detail, list(v.configs))
        elif v.category == C.MUTANT_REJECTED:
            mutant_key = DedupKey.parse(v.key)  # the same error, judged as the differential oracle judges it
            as_plain = Verdict("bug", C.UNEXPECTED_ERROR, v.detail, list(v.configs),
                               key=dedup_key(C.UNEXPECTED_ERROR, mutant_key.compiler, *mutant_key.fields))
        else:
            as_plain = v
        plain = TestCase(mutant, dict(tc.inputs), tc.configs, seed=tc.seed, compiler=tc.compiler)
        differential = RandomStrategy(self.ctx).still_fails(plain, as_plain)  # the differential oracle's predicate

        inputs = {x.name: tc.inputs[x.name] for x in mutant.inputs}
        if not (self.ctx.budget.take() and differential(mutant, inputs)):
            return None
        return reduce_graph(mutant, inputs, differential, budget=self.ctx.budget)

    def reduce(self, test: Test, v: Verdict) -> Reduction:
        tc: TestCase = test.payload
        if not self.ctx.reduce:
            return self.unreduced(test, v)
        budget = self.ctx.new_budget(REDUCE_S)
        mutant = self.reduce_steps(tc, v)
        node_level = None
        if budget.stopped is None:
            node_level = self.reduce_nodes(tc, v, mutant)
        red = self.reduction(test, v, mutant, node_level)
        red.not_minimal = budget.stopped
        return red

    def unreduced(self, test: Test, v: Verdict) -> Reduction:
        return self.reduction(test, v, self.full_mutant(test.payload), None)

    def reduction(self, test: Test, v: Verdict, mutant: Graph,
                  node_level: tuple[Graph, dict[str, np.ndarray]] | None) -> Reduction:
        from dlcfuzz.mutate.metamorphic import owner

        tc: TestCase = test.payload
        mt = Mutant.of(tc)
        configs = [c for c in tc.configs if c.name in v.configs] or tc.configs
        steps = sorted({owner(n.name) for n in mutant.nodes if n.name and owner(n.name) is not None})
        final = node_level[0] if node_level else mutant
        key = v.key if v.category != C.METAMORPHIC else with_option(v.key, "ops", ','.join(sorted(final.ops_used())))
        backend = self.ctx.backend

        def write(f: Finding) -> str | None:
            detail = (f"{v.detail}\nmodel {mt.model} (seed {mt.model_seed}); the mutant keeps {len(steps)} mutation "
                      f"step(s): {steps}")
            if node_level is not None:
                detail += f"\nnode-level reduction: {len(mutant.nodes)} -> {len(final.nodes)} nodes (reduced.txt)"
            save(mutant, f.folder / "mutant.json")
            (f.folder / "detail.txt").write_text(f"{f.title}\nsignature {f.signature}\nkey {f.key}\ntest {f.test_id}\n\n"
                                                 f"{detail}\nreplay: dlcfuzz replay RUN --test {f.test_id}\n")
            np.savez(f.folder / "inputs.npz", **tc.inputs)
            script = None
            files = backend.pair_reproducer(self.chain().seed, mutant, tc.inputs, configs, mt.delta, f.title, detail)
            for name, content in (files or {}).items():
                path = f.folder / name
                path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
                script = content if name.endswith(".py") and isinstance(content, str) else script
            if node_level is not None:
                g, inputs = node_level
                rejected = v.category == C.MUTANT_REJECTED
                expected = None if rejected else reference_of(TestCase(g, dict(inputs), configs, seed=tc.seed),
                                                              tries=1).outputs
                script = backend.reproducer(g, inputs, expected, configs,
                                            C.UNEXPECTED_ERROR if rejected else C.WRONG_RESULT, f.title, detail)
                save(g, f.folder / "reduced.json")
                np.savez(f.folder / "reduced_inputs.npz", **inputs)
                (f.folder / "reduced.txt").write_text(to_text(g) + "\n")
            if script is not None:
                (f.folder / "repro.py").write_text(script)
            return script

        return Reduction(key, len(tc.graph.nodes), len(final.nodes), write,
                         f"{len(steps)} mutation steps kept, {len(final.nodes)} nodes")


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Worker side: compile and run the mutant, and its seed model with the same configurations
    (the seed's observation is computed once per worker and chain inputs: a chain's inputs never
    change). Plain graphs (the node-level reduction of a mutant) get the ordinary differential handler."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.pool import progress
    from dlcfuzz.exec.worker import make_handler as differential
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.zoo import build

    plain = differential(init)  # imports the plug-ins too
    backend = get_backend(init["compiler"])
    version = backend.version()
    seeds: dict[tuple[str, int], Graph] = {}
    seed_runs: dict[tuple[str, int, str, bytes], Observation] = {}

    def handle(payload: bytes) -> bytes:
        tc = TestCase.from_bytes(payload)
        if "metamorphic" not in tc.meta:
            return plain(payload)
        mt = Mutant.of(tc)
        key = (mt.model, mt.model_seed)
        if key not in seeds:
            seeds[key] = build(*key)
        seed = seeds[key]
        tc.graph.constants = {**{k: seed.constants[k] for k in mt.shared}, **tc.graph.constants}
        obs = run_configs(backend, tc, progress)
        inputs = b"".join(k.encode() + a.tobytes() for k, a in sorted(tc.inputs.items()))  # the chain's
        for c in tc.configs:
            run = (*key, c.name, inputs)
            if run not in seed_runs:
                (seed_runs[run],) = run_configs(backend, TestCase(seed, tc.inputs, [c]), progress)
                while len(seed_runs) > SEED_RUNS_HELD:
                    del seed_runs[next(iter(seed_runs))]
            o = seed_runs[run]
            obs.append(Observation(f"seed:{c.name}", o.status, o.outputs, o.error, o.traceback, o.compile_s, o.run_s))
        return observations_to_bytes(obs, version)

    return handle

"""OATest (ICSE 2026): optimization patterns from the compiler's own tests spliced into seed graphs;
trigger rates per optimization; findings deduplicated by their minimal optimization set. Judged by
the ordinary differential oracle (reference + unoptimized vs optimized configuration)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.errors import UsageError
from dlcfuzz.ir.graph import Graph
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.policy import NUMERIC, reference_of
from dlcfuzz.oracle.testcase import TestCase
from dlcfuzz.oracle.verdict import Verdict
from dlcfuzz.strategies.base import Context, Judgement, Option, StrategyStore, Test
from dlcfuzz.strategies.graph import ONLY_OPS, OPS, REGIONS, SIZES, VALUES, GraphStrategy

if TYPE_CHECKING:
    from dlcfuzz.exec.pool import Pool, TaskResult

HANDLER = "dlcfuzz.strategies.oatest:make_handler"
FORM_GAP_TRIES = 8  # syntheses tried per test before one that holds a form the compiler lacks is kept
SPLICED = re.compile(r"^s(\d+)_")  # a spliced node's name (synth/synthesize.splice): its splice's number
BRIDGE = re.compile(r"^s\d+_o?b\d+$")  # ... of a bridge node, into the pattern's holes or out of its outputs


def around_splice(g: Graph, rng: np.random.Generator, **kw: Any) -> Graph | None:
    """`g` with the nodes of its latest splice in a region (gen/regions.wrap_range): a run of them (the pattern with
    its bridges), or a run of its bridges alone; None where no run's values are read after it."""
    from dlcfuzz.gen.regions import wrap_range

    uids = [int(m.group(1)) for n in g.nodes if (m := SPLICED.match(n.name or ""))]
    if not uids:
        return None
    prefix = f"s{max(uids)}_"

    def runs(inside: Callable[[str], bool]) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for k, n in enumerate(g.nodes):
            if not inside(n.name or ""):
                continue
            if out and out[-1][1] == k:
                out[-1] = (out[-1][0], k + 1)
            else:
                out.append((k, k + 1))
        return out

    ranges = runs(lambda name: name.startswith(prefix))
    ranges += [r for r in runs(lambda name: name.startswith(prefix) and bool(BRIDGE.match(name))) if r not in ranges]
    start, stop = ranges[int(rng.integers(len(ranges)))]
    return wrap_range(g, start, stop, rng, **kw)


def campaign_patterns(path: str | None, compiler: str) -> list[Any]:
    """A user's pattern file, or what ships: the built-in library and the patterns mined from the
    compiler's own tests."""
    from dlcfuzz.synth.library import shared_default_patterns
    from dlcfuzz.synth.pattern import load_patterns

    return load_patterns(path) if path else shared_default_patterns(compiler)


class OatestStrategy(GraphStrategy):
    name = "oatest"
    summary = "optimization patterns spliced into seed graphs (OATest)"
    handler = HANDLER
    draws_for_doors = False  # oatest_configs: the baseline's front door, with the targeted passes
    options = (OPS, ONLY_OPS, VALUES, SIZES, REGIONS,
               Option("patterns", None, "pattern file from `dlcfuzz patterns extract` (default: the built-in library "
                      "and the shipped mined patterns)"))

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.synthesizer: Any = None

    @classmethod
    def validate(cls, params: dict[str, Any], compiler: str) -> None:
        super().validate(params, compiler)
        if params.get("patterns"):
            from dlcfuzz.synth.pattern import load_patterns

            if not load_patterns(params["patterns"]):
                raise UsageError(f"{params['patterns']} holds no patterns")

    def start(self, pool: Pool, resumed: bool) -> None:
        super().start(pool, resumed)
        self.restore(self.ctx.store.next_seq() if resumed else 0)

    def restore(self, seq: int) -> None:
        """The seed pool grows at generation time (never with worker results, whose order depends on
        timing): replaying the generation of tests 0..seq-1 (milliseconds each) gives the pool the
        campaign had when it made test `seq`, and so every later test."""
        from dlcfuzz.oracle.policy import test_seed
        from dlcfuzz.synth.synthesize import Synthesizer

        p = self.params
        try:
            targets_name = self.ctx.backend.pattern_targets()  # what patterns call this compiler
            # a pattern is a fixed graph: it needs kernels for its operators (`capable`), not the opset
            # discipline of generated graphs, which keeps QuantizeLinear (an opset raiser for its int16 form)
            # out of every graph, and with it every QDQ transformer's pattern
            self.synthesizer = Synthesizer(campaign_patterns(p.get("patterns"), targets_name), targets_name,
                                           self.supported, seed_ops=max(2, min(p["ops"], 10)),
                                           only_ops=p.get("only_ops") or None, patterns_supported=self.capable)
        except ValueError as e:  # every pattern uses an operator/dtype this compiler lacks
            raise UsageError(f"--strategy oatest: {e}") from None
        for earlier in range(seq):
            if self.ctx.mine is not None and not self.ctx.mine(earlier):
                continue  # inside `auto`: another strategy's test
            s = test_seed(self.ctx.seed, earlier)
            try:
                self.synthesize(s, np.random.default_rng(s))
            except Exception:  # noqa: S112 - that test was an internal error of its own, already stored
                continue

    def make_test(self, seq: int, seed: int) -> Test:
        return self.test(seq, self.synthesize(seed, np.random.default_rng(seed)))

    def synthesize(self, seed: int, rng: np.random.Generator) -> TestCase:
        from dlcfuzz.gen.random import form_gaps_in
        from dlcfuzz.gen.repair import sample_values
        from dlcfuzz.gen.sizes import draw_sizes
        from dlcfuzz.synth.synthesize import validity_fault

        syn = self.synthesizer
        sizes = draw_sizes(rng, self.params.get("sizes", SIZES.default))  # long axes on a share of tests
        # a pattern's nodes keep the attributes they were mined with, so generation cannot sample around the
        # compiler's known form gaps (its kernels lack the form): another synthesis instead, a few times
        for _ in range(FORM_GAP_TRIES):
            s = syn.next(rng, sizes=sizes)
            if not form_gaps_in(s.graph, self.ctx.backend.known_form_gaps):
                break
        by_name = syn.named
        targets = sorted({t for name in s.patterns if name in by_name for t in by_name[name].targets_for(self.ctx.backend.pattern_targets())})
        configs = list(self.ctx.configs)
        if not self.ctx.configs_picked:
            configs = self.ctx.backend.oatest_configs(rng, targets, configs)
        s.graph = self.with_regions(s.graph, seed, self.supported, around_splice)
        spliced = s.graph.copy()
        s.graph, inputs = self.with_inputs(s.graph, rng)
        if validity_fault(s.graph) is not None:  # an edge value attribute (a Range's bounds) moved a fixed index out
            s.graph, inputs, self.edges = sample_values(spliced, rng, "small")  # of its domain: the pattern's own values
        meta = {"oatest": {"pattern": s.pattern, "patterns": s.patterns, "targets": targets, "order": s.order,
                           "reused": s.reused, "bridged": s.bridged, "fresh": s.fresh, "connected": s.connected}}
        tc = self.test_case(s.graph, inputs, seed, configs, meta)
        if reference_of(TestCase(s.graph, dict(inputs), configs, seed=seed), tries=1, stability=False).outputs is not None:
            syn.accept(s)
        return tc

    def judge(self, test: Test, res: TaskResult) -> Judgement:
        j = super().judge(test, res)
        if res.status == "ok":
            j.fired = self.record_triggers(test, res.payload)
        return j

    def record_triggers(self, test: Test, reply: bytes) -> list[str]:
        """Which targeted optimizations fired in the optimized configuration (trigger rates); returns
        those that fired."""
        from dlcfuzz.ir.blob import unpack

        fired = (unpack(reply)[0].get("oatest") or {}).get("fired")
        if not fired:
            return []
        pattern = test.payload.meta.get("oatest", {}).get("pattern", "")
        self.ctx.store.add_triggers(test.test_id, pattern, fired)
        return sorted(opt for opt, f in fired.items() if f)

    @classmethod
    def report_section(cls, store: StrategyStore) -> str:
        rates = store.trigger_rates()
        if not rates:
            return ""
        fired = sum(f for f, _ in rates.values())
        total = sum(n for _, n in rates.values())
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{f}</td><td>{n}</td><td>{100.0 * f / n:.0f}%</td></tr>"
                       for k, (f, n) in rates.items())
        return ("<h2>Trigger rate per optimization (oatest)</h2><table><tr><th>optimization</th><th>fired</th>"
                f"<th>targeted</th><th>rate</th></tr>{rows}<tr><th>all</th><th>{fired}</th><th>{total}</th>"
                f"<th>{100.0 * fired / max(total, 1):.0f}%</th></tr></table>")

    # ---- dedup by minimal optimization set ------------------------------
    def early_key(self, test: Test, v: Verdict) -> str | None:
        # an optimized build's rejection is identified, like an inconsistency, by its minimal set
        return None if v.category in NUMERIC or v.category == C.INCONSISTENT_REJECTION else v.key

    def reduction(self, test: Test, v: Verdict, g: Graph, inputs: dict[str, np.ndarray],
                  untyped_outputs: tuple[str, ...] = ()) -> Any:
        red = super().reduction(test, v, g, inputs, untyped_outputs)
        if v.category == C.INCONSISTENT_REJECTION:
            red.key = self.minimal_set_key(test.payload, g, inputs, v, v.key) if self.ctx.budget.stopped is None else v.key
            red.not_minimal = self.ctx.budget.stopped
        return red


def make_handler(init: dict) -> Callable[[bytes], bytes]:
    """Worker side: the ordinary differential handler, plus which of the optimizations a synthesized
    test's patterns target fired in its optimized configuration."""
    from dlcfuzz.backends import get_backend
    from dlcfuzz.exec.worker import make_handler as ordinary
    from dlcfuzz.ir.blob import pack, unpack

    handle_test = ordinary(init)  # imports the plug-ins too
    backend = get_backend(init["compiler"])

    def handle(payload: bytes) -> bytes:
        reply = handle_test(payload)
        tc = TestCase.from_bytes(payload)
        oa = tc.meta.get("oatest")
        if not oa or not oa.get("targets"):
            return reply
        try:
            fired, error = backend.fired(tc.graph, tc.configs[-1], list(oa["targets"])), None
        except Exception as e:  # the build itself failing is judged by the ordinary oracles
            fired, error = None, f"{type(e).__name__}: {str(e)[:300]}"
        meta, arrays = unpack(reply)
        meta["oatest"] = {"fired": fired, "error": error}
        return pack(meta, arrays)

    return handle

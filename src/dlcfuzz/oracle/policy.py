"""The reference policy: per-test seeds, reference outputs with finite inputs, ill-conditioned
outputs and near ties. Runs in the workers (in parallel) and in the reducers; never runs a compiler."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from dlcfuzz import reference
from dlcfuzz.gen.inputs import sample_inputs
from dlcfuzz.gen.repair import edge_inputs
from dlcfuzz.ir.graph import CALL_OP, Graph, Node
from dlcfuzz.ops import get_op
from dlcfuzz.ops.regions import REGION_OPS
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import CATEGORIES, is_routine
from dlcfuzz.oracle.numeric import all_finite, compare_one, tolerance
from dlcfuzz.oracle.testcase import Config, TestCase
from dlcfuzz.oracle.verdict import Verdict

# categories judged by comparing numbers (the `numeric` column of oracle/categories.py's table)
NUMERIC = tuple(c.name for c in CATEGORIES.values() if c.numeric)


# Values whose computation leaves finite arithmetic (a NaN/Inf intermediate, integer overflow): how
# a compiler handles them is implementation-defined, so outputs are not compared across compilers.
IMPLEMENTATION_DEFINED = (C.NONFINITE_REFERENCE, C.INTEGER_OVERFLOW)
# The program itself has undefined behaviour on these inputs (ONNX leaves integer division by zero,
# and the signed minimum divided by -1, undefined): any output, error or crash of a compiler is
# legal, so no verdict but unknown.
UNDEFINED_BEHAVIOUR = (C.INTEGER_DIVISION_BY_ZERO, C.INTEGER_DIVISION_OVERFLOW)


def routine_unknown(category: str) -> bool:
    """An unknown that says nothing about the compiler (the test's own numerics, a documented rejection):
    a store keeps no blob for it when the strategy can regenerate the test (the table's `routine` column)."""
    return is_routine(category)


def test_seed(master: int, seq: int) -> int:
    """Per-test seeds derived from the one master seed (replayable, independent of --jobs)."""
    return int(np.random.SeedSequence([master, seq]).generate_state(1, dtype=np.uint64)[0]) >> 1


INPUT_SET_STREAM = 0x1A5E7  # keeps the extra input sets' random stream apart from the test's own


def drawn_input_set(tc: TestCase, index: int) -> dict[str, np.ndarray]:
    """Input set `index` (>= 1) of a test of several (`TestCase.input_sets`; set 0 is `tc.inputs`): drawn
    by the inputs' own sampler from the test's seed and the index (with edge value profiles on a share of the
    sets, as on tests, unless the test was made with `--values small`), so the worker, a replay and a
    regenerated test draw the same sets, and making the test draws nothing more."""
    rng = np.random.default_rng([tc.seed, INPUT_SET_STREAM, index])
    inputs = sample_inputs(tc.graph, rng)
    if tc.meta.get("values", "edge") == "edge":  # the test's --values: edge profiles on a share of the sets too
        edge_inputs(tc.graph, inputs, rng)
    return inputs


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
    # down, all away from or toward zero, and at random (reference.run perturb=...: summation order,
    # cancellation in sums, ulps; a relative error of one sign, which a product of many values compounds).
    rng = np.random.default_rng(tc.seed ^ 0x5E45)
    unstable = set()
    evaluations = [reference.run(tc.graph, tc.inputs, exact=True)]
    # ZERO: a tiny value a correct compiler may compute as exactly 0 (then 0/0, log 0): "rounding-induced zero"
    evaluations += [reference.run(tc.graph, tc.inputs, perturb=how)
                    for how in (1.0, -1.0, reference.AWAY_FROM_ZERO, reference.TOWARD_ZERO, rng, reference.ZERO)]
    for evaluation in evaluations:
        for i, (o, r) in enumerate(zip(tc.graph.outputs, ref)):
            e = evaluation[o]
            with np.errstate(over="ignore", invalid="ignore"):  # beyond float16's range becomes inf: unstable
                rounded = e.astype(r.dtype)
            # (compare_one tells a non-finite value apart from the reference's: NaN and inf positions and signs)
            if compare_one(i, rounded, r, scale=0.25) is not None:
                unstable.add(i)
    # Discontinuities (argmax between near-equal values) taint everything downstream of them.
    tainted = near_ties(tc.graph, tc.inputs, tc.graph.functions)
    unstable.update(i for i, o in enumerate(tc.graph.outputs) if o in tainted)
    return unstable


def other_reading_outputs(tc: TestCase) -> list[np.ndarray]:
    """The outputs with every operator whose specification is ambiguous evaluated by its other reading
    (OpSpec.other_reading): a compiler that follows that reading is right too. Evaluated only when a
    comparison with the reference fails."""
    env = reference.run(tc.graph, tc.inputs, other_readings=True)
    return [env[o] for o in tc.graph.outputs]


def near_ties(g: Graph, inputs: Mapping[str, np.ndarray], functions: Mapping[str, Graph]) -> set[str]:
    """Values downstream of a discontinuity decided within tolerance (argmax of near-equal values);
    a call is tainted as a whole when its callee has one, a region (if, loop, scan) where a body has one on
    the branch or trips the reference runs (`region_near_ties`)."""
    return _near_ties(g, inputs, functions)[0]


def _near_ties(g: Graph, inputs: Mapping[str, np.ndarray],
               functions: Mapping[str, Graph]) -> tuple[set[str], dict[str, np.ndarray]]:
    """near_ties, and every value of `g` (a region's body gives its outputs from them)."""
    env = reference.run(g, inputs, keep_all=True, _functions=functions)
    tainted: set[str] = set()
    for n in g.nodes:
        xs = [env[i] for i in n.inputs]
        if n.op == CALL_OP:
            f = functions[n.attrs["callee"]]
            hit = set(range(len(n.outputs))) if near_ties(f, {p.name: x for p, x in zip(f.inputs, xs)}, functions) \
                else set()
        elif n.op in REGION_OPS:
            hit = region_near_ties(n, xs, functions)
        else:
            hit = set(range(len(n.outputs))) if xs and get_op(n.op).near_tie(xs, n.attrs, tolerance(str(xs[0].dtype))) \
                else set()
        if any(i in tainted for i in n.inputs):
            hit = set(range(len(n.outputs)))
        tainted.update(n.outputs[k].name for k in hit)
    return tainted, env


def region_near_ties(n: Node, xs: list[np.ndarray], functions: Mapping[str, Graph]) -> set[int]:
    """The outputs of region node `n` (on its inputs `xs`) downstream of a near tie inside a body, on the branch or
    trips the reference runs: a conditional's outputs that its taken branch's tainted outputs stand for; every
    output of a loop or scan one of whose trips has one (carried values take it into the later trips). Without
    this a tie inside a region went unseen: a floor-mod of a huge quotient inside an If, which legal rounding
    may land anywhere in [0, divisor), became a wrong result of TVM (issue 40's acceptance campaign)."""
    hit: set[int] = set()

    def body_outputs(body: Graph, args: list[np.ndarray]) -> list[np.ndarray]:
        tainted, env = _near_ties(body, {p.name: x for p, x in zip(body.inputs, args)}, functions)
        if n.op == "if":
            hit.update(k for k, o in enumerate(body.outputs) if o in tainted)
        elif tainted:
            hit.update(range(len(n.outputs)))
        return [env[o] for o in body.outputs]

    reference.run_region(n.op, n.attrs, xs, body_outputs, n.name or n.op)
    return hit


def division_after_overflow(g: Graph, where: str | None) -> bool:
    """Whether an integer division or remainder (`reference.DIVISIONS`) divides by a value computed from node `where`
    (its name, or its op), whose integer result overflowed. Past an overflow the values are the compiler's own
    (wrapped or saturated), so such a divisor may be zero, and a signed dividend the minimum over a -1: undefined
    behaviour (a division-by-zero error, a SIGFPE) that the reference cannot rule out. A region or call it reaches counts
    when any body holds an integer division; an overflow inside one (not a node of `g`) counts any of `g`'s."""

    def integer_divisions(nodes: list[Node]) -> bool:
        return any(n.op in reference.DIVISIONS and np.dtype(n.outputs[0].type.np_dtype).kind in "iu" for n in nodes)

    start = next((n for n in g.nodes if (n.name or n.op) == where), None)
    if start is None:
        return integer_divisions(g.all_nodes())
    tainted = set(start.output_names)
    for n in g.nodes[g.nodes.index(start) + 1:]:
        if not tainted.intersection(n.inputs):
            continue
        signed = np.dtype(n.outputs[0].type.np_dtype).kind == "i"
        if integer_divisions([n]) and (n.inputs[1] in tainted or (signed and n.inputs[0] in tainted)):
            return True
        inner = [m for body in n.bodies().values() for m in body.all_nodes()]
        if n.op == CALL_OP:
            inner = g.functions[n.attrs["callee"]].all_nodes()
        if integer_divisions(inner):
            return True
        tainted.update(n.output_names)
    return False


def reference_of(tc: TestCase, tries: int = 3, stability: bool = True) -> Reference:
    """Reference outputs, re-sampling inputs until every value is finite, or every non-finite value comes from
    the inputs and constants (edge tests' non-finite profile) through operators that define it
    (reference.nonfinite_undefined).

    With stability=False the (costlier) ill-conditioning check is left to the caller, who runs
    it only when a comparison fails (see unstable_outputs).
    """
    rng = np.random.default_rng(tc.seed ^ 0x5EED)
    reason = C.NONFINITE_REFERENCE
    for _ in range(tries):
        try:
            env = reference.run(tc.graph, tc.inputs, keep_all=True, check_overflow=True, check_nonfinite=True)
        except reference.IntegerDivisionByZero:
            env, reason = None, C.INTEGER_DIVISION_BY_ZERO
        except reference.IntegerDivisionOverflow:
            env, reason = None, C.INTEGER_DIVISION_OVERFLOW
        except reference.IntegerOverflow as e:
            # a divisor computed from the overflowed value is the compiler's (wrapped, saturated): it may be zero
            env, reason = None, (C.INTEGER_DIVISION_BY_ZERO if division_after_overflow(tc.graph, e.node)
                                 else C.INTEGER_OVERFLOW)
        except reference.IntermediateOverflow:  # an Inf inside the compiler's kernel, not in the reference's
            env, reason = None, C.NONFINITE_REFERENCE
        except reference.NonfiniteInBody:  # a NaN a region's body hides (an argmin of atanh's NaN), as at top level
            env, reason = None, C.NONFINITE_REFERENCE
        # Every intermediate must be finite too, but where each operator that sees an inf or NaN defines it
        # (OpSpec.nonfinite): a NaN that a cast or a max hides is implementation-defined, and would make a
        # "bug" of legal behaviour; one that IEEE-754 arithmetic propagates is not.
        if env is not None and (all_finite(list(env.values())) or reference.nonfinite_undefined(tc.graph, env) is None):
            ref = [env[o] for o in tc.graph.outputs]
            return Reference(ref, None, unstable_outputs(tc, ref) if stability else set())
        reason = reason if env is None else C.NONFINITE_REFERENCE
        tc.inputs = sample_inputs(tc.graph, rng)
    return Reference(None, reason)


def failure_reference_reason(tc: TestCase) -> str | None:
    """The reference's reason for a test whose worker died (a crash, a hang): set 0's (`reference_of` on the
    inputs the worker used), unless undefined behaviour (UNDEFINED_BEHAVIOUR) on one of its other input sets
    (`drawn_input_set`) says more. The dead worker ran every set, so a SIGFPE may come from another set's zero
    divisor while set 0's inputs are defined (issue 37's TVM finding 164: a uint32 Mod of an input by itself,
    defined on set 0 and dividing by zero on six of its seven other sets)."""
    reason = reference_of(tc, stability=False).reason  # the reason only: no ill-conditioning check
    if reason in UNDEFINED_BEHAVIOUR:
        return reason
    for index in range(1, tc.input_sets):
        one = TestCase(tc.graph, drawn_input_set(tc, index), tc.configs, seed=tc.seed, compiler=tc.compiler)
        other = reference_of(one, stability=False).reason
        if other in UNDEFINED_BEHAVIOUR:
            return other
    return reason


def documented_limits(tc: TestCase, verdicts: list[Verdict],
                      limitation: Callable[[Config, Mapping[str, np.ndarray]], str | None]) -> list[Verdict]:
    """A numeric bug of which a configuration computes outside what its compiler documents for this test's
    values (`limitation`: the backend's `documented_limitation`) becomes a DOCUMENTED_LIMITATION unknown
    with the reason: counted apart, never a new bug. The reference's values are evaluated only when there
    is a numeric bug to explain."""
    if not any(v.kind == "bug" and v.category in NUMERIC for v in verdicts):
        return verdicts
    values = values_with_bodies(tc.graph, tc.inputs, tc.graph.functions)
    by_name = {c.name: c for c in tc.configs}
    out = []
    for v in verdicts:
        why = None
        if v.kind == "bug" and v.category in NUMERIC:
            why = next((w for name in v.configs if name in by_name and (w := limitation(by_name[name], values))), None)
        out.append(v if why is None else
                   Verdict("unknown", C.DOCUMENTED_LIMITATION, f"{v.detail} ({why})", v.configs, v.output_index))
    return out


def values_with_bodies(g: Graph, inputs: Mapping[str, np.ndarray], functions: dict[str, Graph]) -> dict[str, np.ndarray]:
    """Every value the reference computes for `g`, its regions' bodies' on each run too (named
    `<region>/<value>#<run>`): a documented limitation (an int64 beyond int32 on OpenVINO's CPU plugin) holds
    wherever the compiler computes the value, inside a Loop as well."""
    env = reference.run(g, inputs, keep_all=True, _functions=functions)
    out = dict(env)
    for n in g.nodes:
        if n.op not in REGION_OPS:
            continue
        runs = 0

        def body_outputs(body: Graph, args: list[np.ndarray], where: str = n.name or n.op) -> list[np.ndarray]:
            nonlocal runs
            inner = values_with_bodies(body, {p.name: x for p, x in zip(body.inputs, args)}, functions)
            out.update({f"{where}/{k}#{runs}": v for k, v in inner.items()})
            runs += 1
            return [inner[o] for o in body.outputs]

        reference.run_region(n.op, n.attrs, [env[i] for i in n.inputs], body_outputs, n.name or n.op)
    return out


def onnx_check_failure(g: Graph) -> str | None:
    """Why ONNX's own full check (`onnx.checker.check_model(full_check=True)`: strict shape and type inference)
    rejects the graph's ONNX model, or None when it accepts it."""
    import onnx

    from dlcfuzz.lower.onnx import to_onnx

    try:
        onnx.checker.check_model(to_onnx(g), full_check=True)
    except Exception as e:  # ValidationError, InferenceError, ...: onnx's own verdict on the model
        return f"{type(e).__name__}: {e}".strip()
    return None


def invalid_rejections(tc: TestCase, verdicts: list[Verdict], front_door: Callable[[str], str]) -> list[Verdict]:
    """A rejection by a configuration whose front door takes an ONNX model (`Backend.front_door`) of a model
    that ONNX's own full check rejects as well says nothing about the compiler: the inconsistent rejection
    becomes an INVALID_TEST unknown with the checker's reason (the configurations that compile it are lenient)."""
    if not any(v.category == C.INCONSISTENT_REJECTION and front_door(v.configs[0]) == "onnx" for v in verdicts):
        return verdicts
    why = onnx_check_failure(tc.graph)
    if why is None:
        return verdicts
    return [Verdict("unknown", C.INVALID_TEST, f"{v.detail}; ONNX's full check rejects the model too: {why}", v.configs)
            if v.category == C.INCONSISTENT_REJECTION and front_door(v.configs[0]) == "onnx" else v for v in verdicts]

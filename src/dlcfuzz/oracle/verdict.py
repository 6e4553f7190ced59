"""Verdicts: bug, unknown or pass. Only bugs become findings; unknowns are counted with their reason."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import dedup_key
from dlcfuzz.oracle.numeric import compare, compare_one
from dlcfuzz.oracle.signature import error_key, normalize, top_frames
from dlcfuzz.oracle.testcase import Observation


@dataclass
class Verdict:
    kind: str  # "bug" | "unknown" | "pass"
    category: str  # a name of oracle/categories.py's table (CRASH, WRONG_RESULT, ...)
    detail: str = ""
    configs: list[str] = field(default_factory=list)
    output_index: int = -1
    key: str = ""  # dedup key (before the graph's operator signature is added)
    input_set: int = 0  # the input set that shows it (TestCase.input_sets)

    def to_json(self) -> dict[str, Any]:
        return self.__dict__.copy()


# an inconsistency judged with the reference: the configuration listed last differs from it, the first agrees
AGAINST_REFERENCE = "and the reference"


def blamed_configs(category: str, configs: Sequence[str], detail: str) -> tuple[str, ...]:
    """The configurations a finding's verdict blames, of those it lists: the one that differs from the reference
    in an inconsistency judged with it, the one that rejects in an inconsistent rejection, all of them otherwise
    (every configuration that differs from the reference, or the one that failed)."""
    if category == C.INCONSISTENCY and AGAINST_REFERENCE in detail:
        return tuple(configs[-1:])
    if category == C.INCONSISTENT_REJECTION:
        return tuple(configs[:1])
    return tuple(configs)


def crash_verdict(compiler: str, status: str, error: str, progress: str | None, stderr: str,
                  native_frames: tuple[str, ...] = ()) -> Verdict:
    """A worker death (signal, abort, OOM) or hang, attributed to the config named by the progress note;
    `native_frames`: the backend's stack-frame patterns (`Backend.frame_patterns`)."""
    config = (progress or "?:?").split(":")[0]
    stage = (progress or "?:?").split(":")[-1]
    category = {"crash": C.CRASH, "oom": C.OOM, "timeout": C.HANG}[status]
    sig = error.split("(")[-1].rstrip(")") if status == "crash" else category
    frames = "/".join(top_frames(stderr, native=native_frames))
    return Verdict("bug", category, f"{error} during {stage} of {config}\n{stderr[-2000:]}", [config],
                   key=dedup_key(category, compiler, stage, sig, normalize(frames)))


def judge(
    compiler: str, expected_error: Any, reference: list[np.ndarray] | None, observations: list[Observation],
    unstable: set[int] | frozenset[int] = frozenset(), native_frames: tuple[str, ...] = (),
    other_reading: list[np.ndarray] | None = None,
) -> list[Verdict]:
    """Compare observations of one test: with each other and, when available, with the reference.

    `expected_error(message) -> str | None` is the backend's documented-rejection classifier;
    outputs in `unstable` are ill-conditioned (rounding alone can move them past the
    tolerance) and are not compared. `native_frames`: the backend's stack-frame patterns.
    `other_reading`: the reference's outputs under the other reading of its ambiguous operators
    (policy.other_reading_outputs); an output that equals either reading is right.
    """

    def mismatches(got: list[np.ndarray], ref: list[np.ndarray]) -> list[Any]:
        return [m for m in compare(got, ref) if m.index not in unstable]

    def wrong_against_reference(got: list[np.ndarray]) -> list[Any]:
        bad = mismatches(got, reference or [])
        if other_reading is None:
            return bad
        return [m for m in bad if m.index < 0 or compare_one(m.index, got[m.index], other_reading[m.index]) is not None]

    if observations and all(o.status == "skipped" for o in observations):  # no configuration could be tried
        return [Verdict("unknown", C.NOT_LOWERABLE, "; ".join(o.error or "" for o in observations))]
    verdicts: list[Verdict] = []
    ok = [o for o in observations if o.status == "ok"]
    unexpected: dict[str, Verdict] = {}  # one finding per distinct message, naming every config that raised it
    for o in observations:
        if o.status != "error":
            continue
        expected = expected_error(o.error or "")
        if expected:
            verdicts.append(Verdict("unknown", C.expected_error(expected), o.error or "", [o.config]))
            continue
        same = unexpected.get(normalize(o.error or ""))
        if same is not None:
            same.configs.append(o.config)
            continue
        v = Verdict("bug", C.UNEXPECTED_ERROR, f"{o.error}\n{o.traceback or ''}", [o.config],
                    key=dedup_key(C.UNEXPECTED_ERROR, compiler, error_key(o.error or '', o.traceback, native_frames)))
        unexpected[normalize(o.error or "")] = v
        verdicts.append(v)
    # "one compiles, the other fails" with an unexpected error is already a bug above; a validity
    # rejection in only some configs means they disagree about validity. An "unsupported" one does
    # not: front doors and kernels legitimately cover different operators.
    errs = [o for o in observations if o.status == "error"
            and expected_error(o.error or "") not in (None, "unsupported")]
    if ok and errs:
        verdicts.append(Verdict("bug", C.INCONSISTENT_REJECTION,
                                f"{errs[0].config} rejects ({errs[0].error}) while {ok[0].config} compiles",
                                [errs[0].config, ok[0].config],
                                key=dedup_key(C.INCONSISTENT_REJECTION, compiler, errs[0].config,
                                              error_key(errs[0].error or '', native=native_frames))))
    if reference is not None:
        wrong = []
        for o in ok:
            bad = wrong_against_reference(o.outputs or [])
            if bad:
                wrong.append((o, bad[0]))
        right = [o for o in ok if o not in [w[0] for w in wrong]]
        if wrong and not right:
            # every configuration disagrees with the reference: one finding, not one per config
            o, m = wrong[0]
            names = [w[0].config for w in wrong]
            verdicts.append(Verdict("bug", C.WRONG_RESULT,
                                    f"{', '.join(names)} differ from the reference at output {m.index}: {m.detail}",
                                    names, m.index, key=dedup_key(C.WRONG_RESULT, compiler, ','.join(names), m.reason)))
        for o, m in (wrong if right else []):
            verdicts.append(Verdict("bug", C.INCONSISTENCY,
                                    f"{o.config} differs from {right[0].config} {AGAINST_REFERENCE} at output {m.index}: {m.detail}",
                                    [right[0].config, o.config], m.index,
                                    key=dedup_key(C.INCONSISTENCY, compiler, right[0].config, o.config, m.reason)))
    else:
        for a, b in zip(ok, ok[1:]):
            bad = mismatches(b.outputs or [], a.outputs or [])
            if bad:
                m = bad[0]
                verdicts.append(Verdict("bug", C.INCONSISTENCY, f"{b.config} vs {a.config} at output {m.index}: {m.detail}",
                                        [a.config, b.config], m.index,
                                        key=dedup_key(C.INCONSISTENCY, compiler, a.config, b.config, m.reason)))
    if not verdicts:
        verdicts.append(Verdict("pass", C.PASS))
    return verdicts


TWIN = "twin:"  # observations of a disruptive test's legal twin are named "twin:CONFIG"


def judge_rejection(compiler: str, broken: dict[str, str], observations: list[Observation],
                    per_op: Callable[[str], bool] = lambda config: True,
                    lenient: Callable[[str], str | None] = lambda config: None,
                    expected_error: Callable[[str], Any] = lambda message: None,
                    native_frames: tuple[str, ...] = ()) -> list[Verdict]:
    """Disruptive mode: the graph breaks one type/shape rule, so every configuration must reject it
    with an error. Output silently produced is an *accepted-invalid* bug, one per configuration
    (crashes and hangs are judged by crash_verdict as always). The dedup key names the operator
    when `per_op(config)` (each operator's type rule is its own code), else only the rule (a
    front door that validates nothing, such as an importer, is one root cause for all operators).
    `lenient(config)`: why that front door documents accepting this broken form (then an unknown), or None.
    A rejection is checked against the broken node where the test ran its legal twin (observations
    "twin:CONFIG": the same graph with the rule kept): a configuration that fails on the twin too with an
    error its compiler does not document (`expected_error`) rejected the graph for another reason, an
    unexpected error of the compiler on a valid graph, not the expected rejection."""
    what = f"{broken['op']} with its {broken['rule']} rule broken ({broken['why']})"
    twins = {o.config.removeprefix(TWIN): o for o in observations if o.config.startswith(TWIN)}
    observations = [o for o in observations if not o.config.startswith(TWIN)]
    verdicts, lenient_ones = [], []
    for o in observations:
        twin = twins.get(o.config)
        if o.status == "error" and twin is not None and twin.status == "error" and not expected_error(twin.error or ""):
            verdicts.append(Verdict(
                "bug", C.UNEXPECTED_ERROR,
                f"{o.config} rejects the test's legal twin too (the same graph with {broken['op']}'s {broken['rule']} "
                f"rule kept), so its rejection is not about the broken node: {twin.error}\n{twin.traceback or ''}",
                [o.config], key=dedup_key(C.UNEXPECTED_ERROR, compiler,
                                          error_key(twin.error or '', twin.traceback, native_frames))))
        if o.status != "ok":
            continue
        why = lenient(o.config)
        if why is not None:
            lenient_ones.append(Verdict("unknown", C.DOCUMENTED_LENIENCY,
                                        f"{o.config} compiled and ran {what} without an error: {why}", [o.config]))
            continue
        scope = broken["op"] if per_op(o.config) else "any-operator"
        verdicts.append(Verdict("bug", C.ACCEPTED_INVALID, f"{o.config} compiled and ran {what} without an error",
                                [o.config], key=dedup_key(C.ACCEPTED_INVALID, compiler, o.config, scope, broken['rule'])))
    if verdicts or lenient_ones:
        return verdicts or lenient_ones
    if not any(o.status == "error" for o in observations):  # no configuration could be tried
        return [Verdict("unknown", C.NOT_LOWERABLE, "; ".join(o.error or "" for o in observations))]
    return [Verdict("pass", C.REJECTED)]


def judge_metamorphic(compiler: str, observations: list[Observation], delta: float,
                      native_frames: tuple[str, ...] = ()) -> list[Verdict]:
    """MT-DLComp: a mutant and its seed model, compiled by the same configuration, must agree on
    the top-1 label and on every score within `delta` (relative: |a - b| / max(1, |b|)); a mutant
    that fails where its seed compiles is a bug. Observations of the seed are named "seed:CONFIG"."""
    seed = {o.config.removeprefix("seed:"): o for o in observations if o.config.startswith("seed:")}
    verdicts: list[Verdict] = []
    for o in observations:
        s = seed.get(o.config)
        if o.config.startswith("seed:") or s is None:
            continue
        if s.status != "ok":
            verdicts.append(Verdict("unknown", C.SEED_REJECTED, s.error or "", [o.config]))
        elif o.status != "ok":
            verdicts.append(Verdict("bug", C.MUTANT_REJECTED, f"{o.config} fails on the mutant while its seed "
                                    f"compiles: {o.error}\n{o.traceback or ''}", [o.config],
                                    key=dedup_key(C.MUTANT_REJECTED, compiler,
                                                  error_key(o.error or '', o.traceback, native_frames))))
        else:
            for i, (a, b) in enumerate(zip(o.outputs or [], s.outputs or [])):
                a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
                if a.shape != b.shape:
                    why = f"shape {a.shape} != {b.shape}"
                elif a.ndim and not np.array_equal(a.reshape(a.shape[0], -1).argmax(-1), b.reshape(b.shape[0], -1).argmax(-1)):
                    why = "top-1 label differs"
                else:
                    d = float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))
                    if not d > delta and np.isnan(a).sum() == np.isnan(b).sum():
                        continue
                    why = f"score distance {d:.3g} > {delta}"
                verdicts.append(Verdict("bug", C.METAMORPHIC, f"{o.config}: mutant vs seed at output {i}: {why}",
                                        [o.config], i, key=dedup_key(C.METAMORPHIC, compiler, o.config, why.split(' ')[0])))
                break
    return verdicts or [Verdict("pass", C.PASS)]

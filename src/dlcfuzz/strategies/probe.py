"""Capability probing: one-operator tests per dtype tell what a compiler supports.

The answer is cached per compiler version (in the user's cache folder), so campaigns do not
drown in "unsupported" noise and do not pay for the probe twice.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dlcfuzz.cache import cache_root, cached_json
from dlcfuzz.errors import TypeRuleError
from dlcfuzz.gen.random import FormGaps
from dlcfuzz.ir.graph import CALL_OP, Graph, Node, Value
from dlcfuzz.ir.types import TensorType
from dlcfuzz.ops import all_ops

if TYPE_CHECKING:
    from dlcfuzz.backends.base import Backend
    from dlcfuzz.exec.pool import Pool
    from dlcfuzz.oracle.testcase import Config

Capabilities = dict[tuple[str, str], tuple[bool, str]]


def ops_fingerprint() -> str:
    """Changes whenever an operator spec or a lowering changes, so that a stale probe is not reused."""
    import dlcfuzz.lower
    import dlcfuzz.ops

    h = hashlib.sha1(Path(__file__).read_bytes())  # and whenever the probe itself changes
    for pkg in (dlcfuzz.ops, dlcfuzz.lower):
        for f in sorted(Path(pkg.__file__).parent.rglob("*.py")):  # lowering rules live in lower/<target>/
            h.update(f.read_bytes())
    return h.hexdigest()[:10]


def cache_path(compiler: str, version: str, configs: list[str], at_top: bool = False, forms: str = "",
               among: str = "") -> Path:
    """Per compiler release and probed configurations: what one front door supports (TVM's ONNX importer
    takes ORT's contrib operators; its direct Relax lowering cannot) says nothing about another's.
    `forms` (forms_fingerprint): the compiler's known form gaps, which the probe's instances avoid.
    `among`: the configuration whose supported pairs alone were probed (a door's probe, `probe(among=...)`)."""
    root = cache_root()
    probed = "+".join(sorted(configs))
    probed += "-top" if at_top else ""
    probed += f"-{forms}" if forms else ""
    probed += f"-among-{among}" if among else ""
    safe = "".join(c if c.isalnum() or c in "._-+" else "_" for c in f"{compiler}-{version}-{probed}-{ops_fingerprint()}")
    return root / "capabilities" / f"{safe}.json"


def forms_fingerprint(backend: Backend) -> str:
    """The backend's known form gaps (operator and reason of each), "" when it has none."""
    gaps = sorted((g.op, g.reason) for spec in all_ops() for g in backend.known_form_gaps(spec.name))
    return hashlib.sha1(json.dumps(gaps).encode()).hexdigest()[:8] if gaps else ""


def probe_cases(seed: int = 0, form_gaps: FormGaps | None = None) -> list[tuple[str, str, Any]]:
    """(op, dtype, TestCase-less graph) pairs: one small instance per operator and dtype; with `form_gaps`
    (a backend's known_form_gaps) instances outside them, so that a form the compiler lacks does not mark
    the whole (op, dtype) pair unsupported."""
    from dlcfuzz.gen.random import avoiding
    from dlcfuzz.gen.single import single_op_graph

    rng = np.random.default_rng(seed)
    out = []
    for spec in all_ops():
        spec = avoiding(spec, form_gaps) if form_gaps is not None else spec
        for dtype in spec.dtypes:
            g = None
            # rank 2-ish first, then others; shapes for operators that need square matrices (Det), a dim of
            # 1 (Squeeze) or a complex pair last (DFT, STFT)
            shapes = [tuple(dims[:rank]) for dims in ([2, 3, 4, 3, 2], [3] * 5, [2, 1, 3, 1, 2], [3, 8, 2, 2, 2], [8, 1, 1, 1, 1])
                      for rank in sorted(spec.ranks, key=lambda r: abs(r - 2))]
            for shape in shapes:
                try:
                    g = single_op_graph(spec, rng, TensorType(dtype, shape))
                    break
                except TypeRuleError:
                    continue
            if g is not None:
                out.append((spec.name, dtype, g))
    return out


PROBE_BATCH = 16  # one-operator graphs compiled together; a batch that is not all fine is split


def side_by_side(graphs: list[Graph]) -> Graph:
    """One graph computing every graph of `graphs` independently (names prefixed per part, sub-functions
    and the calls to them included)."""
    out = Graph(name="probe")
    for k, g in enumerate(graphs):
        p = f"p{k}_"

        def attrs(n: Node, p: str = p) -> dict:
            return {**n.attrs, "callee": p + n.attrs["callee"]} if n.op == CALL_OP else dict(n.attrs)

        out.inputs += [Value(p + v.name, v.type) for v in g.inputs]
        out.constants.update({p + name: a for name, a in g.constants.items()})
        out.nodes += [Node(n.op, [p + i for i in n.inputs], [Value(p + v.name, v.type) for v in n.outputs],
                           attrs(n), name=p + n.name) for n in g.nodes]
        out.outputs += [p + o for o in g.outputs]
        # a sub-function's values are its own: only its name and the calls in it change
        out.functions.update({p + name: Graph(inputs=list(f.inputs), constants=dict(f.constants),
                                              nodes=[Node(n.op, list(n.inputs), list(n.outputs), attrs(n), name=n.name)
                                                     for n in f.nodes],
                                              outputs=list(f.outputs), name=p + name)
                              for name, f in g.functions.items()})
    return out


def _onnx_opset(g: Graph) -> int:
    from dlcfuzz.lower.onnx import to_onnx

    try:
        return int(next(o.version for o in to_onnx(g).opset_import if o.domain == ""))
    except Exception:  # noqa: BLE001 - a graph ONNX cannot write is probed in a batch of its own kind
        return -1


def opset_raisers(seed: int = 0) -> frozenset[tuple[str, str]]:
    """(op, dtype) pairs whose probe graph needs an ONNX opset above the default: in a model they raise
    every other operator to that opset too."""
    return _opset_raisers(seed, tuple(all_ops()))


@functools.cache
def _opset_raisers(seed: int, ops: tuple[Any, ...]) -> frozenset[tuple[str, str]]:
    """Once per process and registry (`ops`: a plug-in may register operators): every graph campaign's
    start asks, and the test suite starts dozens of campaigns in one process (~0.3 s of lowering each)."""
    from dlcfuzz.lower.onnx import OPSET

    return frozenset((op, dt) for op, dt, g in probe_cases(seed) if _onnx_opset(g) > OPSET)


def probe(backend: Backend, configs: list[Config], pool: Pool | None = None, seed: int = 0, batch: int = PROBE_BATCH,
          beside_newest: Capabilities | None = None, among: Capabilities | None = None) -> Capabilities:
    """One-operator tests per (op, dtype), on a WorkerPool (campaigns) or in this process (tests).

    An (op, dtype) is unsupported when every config rejects it with a documented error.
    Crashes and wrong results keep it supported: those are findings, not gaps.
    Group testing keeps this cheap where a compile costs seconds (TVM, Inductor): `batch` graphs are
    compiled side by side; a batch where every config ran without any error vouches for all its
    members, any other is halved until single graphs are judged by the rule above.

    `beside_newest` (this probe's answer for one-operator graphs): each supported pair is probed again
    beside the supported operator of the newest ONNX opset, so that the model is written at that opset. A model's opset is its newest operator's, and an older
    operator then resolves to its newest schema, for which a compiler may have no kernel (onnxruntime
    1.32.0: GlobalLpPool(22); Swish(24) at opset 25); the answer is what such a graph supports.

    `among` (another configuration's answer): only the pairs it supports are probed, and answered (a door's
    probe, `Backend.door_configs`: its tests draw from what both take, and a pair the baseline lacks would
    only split batches)."""
    from dlcfuzz.errors import LoweringGap
    from dlcfuzz.exec.worker import run_configs
    from dlcfuzz.gen.inputs import sample_inputs
    from dlcfuzz.oracle.testcase import TestCase, observations_from_bytes

    rng = np.random.default_rng(seed)
    cases = probe_cases(seed, backend.known_form_gaps)
    inputs = [sample_inputs(g, rng) for _, _, g in cases]
    if among is not None:  # after sampling: each pair keeps the inputs the baseline's probe gave it
        kept = [i for i, c in enumerate(cases) if among.get(c[:2], (False, ""))[0]]
        cases, inputs = [cases[i] for i in kept], [inputs[i] for i in kept]
    caps: Capabilities = {}
    if beside_newest is not None:
        own = beside_newest
        fine = [i for i, c in enumerate(cases) if own.get(c[:2], (False, ""))[0]]
        caps = {k: v for k, v in own.items() if not v[0]}  # unsupported alone is unsupported beside anything
        if not fine:
            return caps
        newest = max(fine, key=lambda i: _onnx_opset(cases[i][2]))
        inputs = [{**{f"p0_{k}": v for k, v in inputs[i].items()}, **{f"p1_{k}": v for k, v in inputs[newest].items()}}
                  for i in fine]
        cases = [(cases[i][0], cases[i][1], side_by_side([cases[i][2], cases[newest][2]])) for i in fine]

    def run(groups: list[list[int]]) -> list[tuple[str, list[Any], str]]:
        tcs = []
        for grp in groups:
            g = cases[grp[0]][2] if len(grp) == 1 else side_by_side([cases[i][2] for i in grp])
            feed = inputs[grp[0]] if len(grp) == 1 else \
                {f"p{k}_{name}": a for k, i in enumerate(grp) for name, a in inputs[i].items()}
            tcs.append(TestCase(g, feed, configs, compiler=backend.name))
        if pool is not None:
            return [(res.status, observations_from_bytes(res.payload)[0] if res.status == "ok" else [], res.error or "")
                    for res in pool.map([tc.to_bytes() for tc in tcs])]
        out: list[tuple[str, list[Any], str]] = []
        for tc in tcs:
            try:
                out.append(("ok", run_configs(backend, tc), ""))
            except LoweringGap as e:
                out.append(("error", [], f"{type(e).__name__}: {e}"))
        return out

    # batch only graphs written at the same ONNX opset: a model's opset is its newest operator's,
    # and an older operator may have more kernels at a newer opset (ORT's SpaceToDepth at 28)
    by_opset: dict[int, list[int]] = {}
    for i, (_, _, g) in enumerate(cases):
        by_opset.setdefault(_onnx_opset(g), []).append(i)
    size = max(batch, 1)
    groups = [members[k:k + size] for members in by_opset.values() for k in range(0, len(members), size)]
    while groups:
        split: list[list[int]] = []
        for grp, (status, obs, error) in zip(groups, run(groups)):
            if len(grp) > 1:
                if status == "ok" and obs and all(o.status == "ok" for o in obs):
                    caps.update({cases[i][:2]: (True, "") for i in grp})
                else:
                    split += [grp[:len(grp) // 2], grp[len(grp) // 2:]]
                continue
            op, dtype = cases[grp[0]][:2]
            if status == "error" and "LoweringGap: " in error:  # the compiler's IR cannot express it (documented)
                caps[(op, dtype)] = (False, error[error.index("LoweringGap: "):][:200])
            elif status == "ok" and obs and all(o.status == "skipped" for o in obs):
                # a disruptive campaign's pool: our lowering's failure is a skipped configuration there
                # (that pool once cached every TVM gap, bitcast and com.microsoft operators, as supported)
                caps[(op, dtype)] = (False, (obs[0].error or "")[:200])
            elif status != "ok":
                caps[(op, dtype)] = (True, f"{status} during probe")
            elif obs and all(o.status == "error" and backend.expected_error(o.error or "") for o in obs):
                caps[(op, dtype)] = (False, (obs[0].error or "")[:200])
            else:
                caps[(op, dtype)] = (True, "")
        groups = split
    return caps


def load_or_probe(pool: Pool | None, backend: Backend, configs: list[Config],
                  log: Callable[[str], None] | None = None, beside_newest: Capabilities | None = None,
                  among: tuple[Config, Capabilities] | None = None) -> Capabilities:
    """The probe's answer, from the cache when this release was probed with these operators before;
    with `beside_newest` (the one-operator answer) what a graph at the newest opset supports; with `among`
    (a configuration and its answer) what `configs` support of the pairs that one supports."""
    identities = {backend.probe_identity(c) for c in configs}  # a wrapper may probe as what it wraps
    name, version = identities.pop() if len(identities) == 1 else (backend.name, backend.version())
    path = cache_path(name, version, [c.name for c in configs], beside_newest is not None,
                      forms_fingerprint(backend), among[0].name if among is not None else "")

    def probed() -> list[dict[str, Any]]:
        if log:
            where = " beside the newest opset's operator" if beside_newest is not None else ""
            where += f" through {', '.join(c.name for c in configs)}, of what {among[0].name} takes" if among else ""
            log(f"probing {backend.version()} (one-operator tests per dtype{where}; cached in {path})")
        caps = probe(backend, configs, pool=pool, beside_newest=beside_newest, among=among[1] if among else None)
        return [{"op": o, "dtype": d, "ok": ok, "reason": r} for (o, d), (ok, r) in sorted(caps.items())]

    # one prober per cache file: a second campaign (or test process) started meanwhile waits and reads its answer
    return {(d["op"], d["dtype"]): (d["ok"], d["reason"]) for d in cached_json(path, probed)}

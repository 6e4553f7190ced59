"""TestCase (what a strategy produces) and Observation (what a backend run yields), with lossless npz blobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.errors import IRError
from dlcfuzz.ir import Graph, dumps, loads
from dlcfuzz.ir.blob import pack, unpack


def _pack(meta: dict, arrays: dict[str, np.ndarray]) -> bytes:
    return pack(meta, arrays)


def _unpack(data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    try:
        return unpack(data)
    except IRError as e:
        raise IRError(f"corrupt test-case blob: {e}") from None


@dataclass(frozen=True)
class Config:
    """One compile configuration: a name for reports and the backend's own options (JSON-able)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "options": self.options}

    @staticmethod
    def from_json(d: dict) -> Config:
        return Config(d["name"], dict(d.get("options", {})))


@dataclass
class TestCase:
    __test__ = False  # not a pytest class

    graph: Graph
    inputs: dict[str, np.ndarray]
    configs: list[Config]
    seed: int = 0
    compiler: str = ""
    strategy: str = "random"
    meta: dict[str, Any] = field(default_factory=dict)
    # input sets each compiled program runs: set 0 is `inputs`, sets 1.. are drawn from the seed
    # (oracle/policy.input_sets); each is judged against the reference
    input_sets: int = 1

    def to_bytes(self) -> bytes:
        arrays = {f"in/{k}": v for k, v in self.inputs.items()}
        arrays["__graph__"] = np.frombuffer(dumps(self.graph), dtype=np.uint8)  # nested blob
        meta = {
            "configs": [c.to_json() for c in self.configs],
            "seed": self.seed,
            "compiler": self.compiler,
            "strategy": self.strategy,
            "meta": self.meta,
            "input_order": list(self.inputs),
        }
        if self.input_sets != 1:  # a one-set test's blob stays as older dlcfuzz wrote it
            meta["input_sets"] = self.input_sets
        return _pack(meta, arrays)

    @staticmethod
    def from_bytes(data: bytes) -> TestCase:
        meta, arrays = _unpack(data)
        try:
            graph = loads(arrays["__graph__"].tobytes())
            return TestCase(
                graph=graph,
                inputs={k: arrays[f"in/{k}"] for k in meta["input_order"]},
                configs=[Config.from_json(c) for c in meta["configs"]],
                seed=int(meta["seed"]),
                compiler=meta["compiler"],
                strategy=meta["strategy"],
                meta=meta.get("meta", {}),
                input_sets=int(meta.get("input_sets", 1)),
            )
        except KeyError as e:
            raise IRError(f"corrupt test-case blob: missing {e}") from None


@dataclass
class Observation:
    """The result of one configuration: outputs, or an error, with timings."""

    config: str
    status: str  # "ok" | "error" | "crash" | "timeout" | "oom" | "skipped"
    outputs: list[np.ndarray] | None = None
    error: str | None = None  # "ExceptionType: message"
    traceback: str | None = None
    compile_s: float = 0.0
    run_s: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)  # backend facts a report names (e.g. executed kernels)
    # the input set it ran (TestCase.input_sets); a configuration that failed before running has one
    # observation, of set 0, which stands for every set
    input_set: int = 0


def observations_to_bytes(obs: list[Observation], version: str, reference: Any = None,
                          inputs: dict[str, np.ndarray] | None = None, coverage: list[str] | None = None,
                          more_sets: list[tuple[Any, dict[str, np.ndarray]]] = ()) -> bytes:
    """A worker's reply: observations, and optionally the reference verdict, re-sampled inputs and the
    compiler's own coverage items while it compiled and ran the test; `more_sets`: the reference and the
    inputs of each input set after the first (what the judge compares them with)."""
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {"version": version, "observations": []}
    if coverage:
        meta["coverage"] = coverage
    for i, o in enumerate(obs):
        meta["observations"].append({
            "config": o.config, "status": o.status, "error": o.error, "traceback": o.traceback,
            "compile_s": o.compile_s, "run_s": o.run_s, "info": o.info, "input_set": o.input_set,
            "n_outputs": None if o.outputs is None else len(o.outputs),
        })
        for k, a in enumerate(o.outputs or []):
            arrays[f"{i}/{k}"] = np.asarray(a)
    if reference is not None:
        meta["reference"] = _put_reference(reference, arrays, "ref")
    if inputs is not None:
        meta["inputs"] = list(inputs)
        arrays.update({f"in/{k}": v for k, v in inputs.items()})
    if more_sets:
        meta["sets"] = []
        for i, (ref, set_inputs) in enumerate(more_sets, start=1):
            meta["sets"].append({"reference": _put_reference(ref, arrays, f"set{i}/ref"), "inputs": list(set_inputs)})
            arrays.update({f"set{i}/in/{k}": v for k, v in set_inputs.items()})
    return _pack(meta, arrays)


def _put_reference(reference: Any, arrays: dict[str, np.ndarray], prefix: str) -> dict[str, Any]:
    outs = reference.outputs
    for k, a in enumerate(outs or []):
        arrays[f"{prefix}/{k}"] = np.asarray(a)
    return {"reason": reference.reason, "unstable": sorted(reference.unstable), "n": None if outs is None else len(outs)}


def _get_reference(r: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> dict[str, Any]:
    return {"outputs": None if r["n"] is None else [arrays[f"{prefix}/{k}"] for k in range(r["n"])],
            "reason": r["reason"], "unstable": set(r["unstable"])}


def reply_more_sets(data: bytes) -> list[tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """(reference {outputs, reason, unstable}, inputs) of each input set after the first of a worker's reply
    ([] for a one-set test)."""
    meta, arrays = _unpack(data)
    return [(_get_reference(d["reference"], arrays, f"set{i}/ref"), {k: arrays[f"set{i}/in/{k}"] for k in d["inputs"]})
            for i, d in enumerate(meta.get("sets", []), start=1)]


def observations_from_bytes(data: bytes) -> tuple[list[Observation], str]:
    obs, version, _, _ = reply_from_bytes(data)
    return obs, version


def reply_coverage(data: bytes) -> list[str]:
    """The compiler coverage items of a worker's reply ([] when its worker collected none)."""
    return list(_unpack(data)[0].get("coverage", []))


def reply_from_bytes(data: bytes) -> tuple[list[Observation], str, dict[str, Any] | None, dict[str, np.ndarray] | None]:
    """(observations, version, reference {outputs, reason, unstable} or None, re-sampled inputs or None)."""
    meta, arrays = _unpack(data)
    out = []
    for i, d in enumerate(meta["observations"]):
        n = d.pop("n_outputs")
        outputs = None if n is None else [arrays[f"{i}/{k}"] for k in range(n)]
        out.append(Observation(outputs=outputs, **d))
    ref = _get_reference(meta["reference"], arrays, "ref") if "reference" in meta else None
    inputs = {k: arrays[f"in/{k}"] for k in meta["inputs"]} if "inputs" in meta else None
    return out, meta["version"], ref, inputs

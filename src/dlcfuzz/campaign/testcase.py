"""TestCase (what a strategy produces) and Observation (what a backend run yields), with lossless npz blobs."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.errors import IRError
from dlcfuzz.ir import Graph, dumps, loads


def _pack(meta: dict, arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    arrays = dict(arrays)
    arrays["__meta__.json"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    np.savez(buf, **arrays)
    return buf.getvalue()


def _unpack(data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(arrays.pop("__meta__.json").tobytes().decode())
    except Exception as e:  # corrupt blobs arrive from disk; report, never crash
        raise IRError(f"corrupt test-case blob: {type(e).__name__}: {e}") from None
    return meta, arrays


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

    def to_bytes(self) -> bytes:
        arrays = {f"in/{k}": v for k, v in self.inputs.items()}
        arrays["__graph__"] = np.frombuffer(dumps(self.graph), dtype=np.uint8)
        meta = {
            "configs": [c.to_json() for c in self.configs],
            "seed": self.seed,
            "compiler": self.compiler,
            "strategy": self.strategy,
            "meta": self.meta,
            "input_order": list(self.inputs),
        }
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


def observations_to_bytes(obs: list[Observation], version: str) -> bytes:
    arrays: dict[str, np.ndarray] = {}
    meta = {"version": version, "observations": []}
    for i, o in enumerate(obs):
        meta["observations"].append({
            "config": o.config, "status": o.status, "error": o.error, "traceback": o.traceback,
            "compile_s": o.compile_s, "run_s": o.run_s,
            "n_outputs": None if o.outputs is None else len(o.outputs),
        })
        for k, a in enumerate(o.outputs or []):
            arrays[f"{i}/{k}"] = np.asarray(a)
    return _pack(meta, arrays)


def observations_from_bytes(data: bytes) -> tuple[list[Observation], str]:
    meta, arrays = _unpack(data)
    out = []
    for i, d in enumerate(meta["observations"]):
        n = d.pop("n_outputs")
        outputs = None if n is None else [arrays[f"{i}/{k}"] for k in range(n)]
        out.append(Observation(outputs=outputs, **d))
    return out, meta["version"]

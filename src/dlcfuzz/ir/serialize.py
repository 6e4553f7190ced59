"""Lossless JSON (+ .npz for constant data) save/load of Graphs; never pickle."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from dlcfuzz.errors import IRError
from dlcfuzz.ir.graph import Graph, Node, Value
from dlcfuzz.ir.types import TensorType

FORMAT = "dlcfuzz-graph/1"


_PLAIN = frozenset((int, str, bool, type(None)))  # exact types JSON writes as they are (floats: when finite)
_PLAIN_OR_FLOAT = _PLAIN | {float}


def _plain(items: list | tuple) -> bool:
    """Whether every item is a scalar JSON writes as it is (an exact int, str, bool, None or finite float)."""
    kinds = set(map(type, items))
    return kinds <= _PLAIN or (kinds <= _PLAIN_OR_FLOAT and all(math.isfinite(x) for x in items if type(x) is float))


def _attr_to_json(v: Any, keys: dict[int, str], prefix: str) -> Any:
    # JSON has no inf/nan: tag them so attributes round-trip exactly.
    if isinstance(v, Graph):  # a region body: its constants go into the npz under the body's prefix
        return {"graph": graph_to_json(v, keys, prefix)}
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    if isinstance(v, (list, tuple)):
        # a list of plain scalars (most list attributes; a Compress condition or ScatterElements' indices hold thousands)
        # as it is, without a call per item: each item would come back unchanged
        if _plain(v):
            return list(v)
        return [_attr_to_json(x, keys, prefix) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _attr_from_json(v: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(v, dict) and set(v) == {"float"}:
        return float(v["float"])
    if isinstance(v, dict) and set(v) == {"graph"}:
        return graph_from_json(v["graph"], arrays)
    if isinstance(v, list):
        return [_attr_from_json(x, arrays) for x in v]
    return v


def _body_prefix(prefix: str, index: int, attr: str) -> str:
    """Where a region body's constants live in the npz: node index and attribute (no function name has '#')."""
    return f"{prefix}#{index}.{attr}/"


def graph_to_json(g: Graph, const_keys: dict[int, str] | None = None, prefix: str = "") -> dict:
    """JSON form of a graph; constant arrays are referenced by key into the npz."""
    keys = {} if const_keys is None else const_keys
    return {
        "format": FORMAT,
        "name": g.name,
        "inputs": [{"name": v.name, **v.type.to_json()} for v in g.inputs],
        "constants": {k: f"{prefix}{k}" for k in g.constants},
        "nodes": [
            {
                "op": n.op,
                "name": n.name,
                "inputs": list(n.inputs),
                "outputs": [{"name": v.name, **v.type.to_json()} for v in n.outputs],
                "attrs": {k: _attr_to_json(a, keys, _body_prefix(prefix, idx, k)) for k, a in n.attrs.items()},
            }
            for idx, n in enumerate(g.nodes)
        ],
        "outputs": list(g.outputs),
        "functions": {
            fname: graph_to_json(f, keys, prefix=f"{prefix}{fname}/") for fname, f in g.functions.items()
        },
    }


def _all_constants(g: Graph, prefix: str = "") -> dict[str, np.ndarray]:
    out = {f"{prefix}{k}": a for k, a in g.constants.items()}
    for idx, n in enumerate(g.nodes):
        for attr, body in n.bodies().items():
            out.update(_all_constants(body, prefix=_body_prefix(prefix, idx, attr)))
    for fname, f in g.functions.items():
        out.update(_all_constants(f, prefix=f"{prefix}{fname}/"))
    return out


def graph_from_json(d: dict, arrays: dict[str, np.ndarray]) -> Graph:
    if d.get("format") != FORMAT:
        raise IRError(f"not a dlcfuzz graph (format {d.get('format')!r})")
    try:
        return Graph(
            name=d["name"],
            inputs=[Value(v["name"], TensorType.from_json(v)) for v in d["inputs"]],
            constants={k: np.array(arrays[ref]) for k, ref in d["constants"].items()},
            nodes=[
                Node(
                    op=n["op"],
                    name=n.get("name", ""),
                    inputs=list(n["inputs"]),
                    outputs=[Value(v["name"], TensorType.from_json(v)) for v in n["outputs"]],
                    attrs={k: _attr_from_json(a, arrays) for k, a in n["attrs"].items()},
                )
                for n in d["nodes"]
            ],
            outputs=list(d["outputs"]),
            functions={k: graph_from_json(f, arrays) for k, f in d.get("functions", {}).items()},
        )
    except (KeyError, TypeError, ValueError) as e:
        raise IRError(f"malformed graph JSON: {type(e).__name__}: {e}") from None


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _load_npz(data: bytes) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:  # numpy raises several types for corrupt archives
        raise IRError(f"corrupt constant archive: {e}") from None


def dumps(g: Graph) -> bytes:
    """One self-contained blob (JSON header + raw constant data)."""
    from dlcfuzz.ir.blob import pack

    return pack(graph_to_json(g), _all_constants(g))


def loads(data: bytes) -> Graph:
    from dlcfuzz.ir.blob import unpack

    meta, arrays = unpack(data)
    return graph_from_json(meta, arrays)


def save(g: Graph, path: str | Path) -> Path:
    """Write PATH (.json) and, when the graph has constants, PATH with suffix .npz."""
    path = Path(path)
    path.write_text(json.dumps(graph_to_json(g), indent=1, sort_keys=True))
    arrays = _all_constants(g)
    npz = path.with_suffix(".npz")
    if arrays:
        npz.write_bytes(_npz_bytes(arrays))
    elif npz.exists():
        npz.unlink()
    return path


def load(path: str | Path) -> Graph:
    path = Path(path)
    try:
        d = json.loads(path.read_text())
    except OSError as e:
        raise IRError(f"cannot read {path}: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IRError(f"{path} is not valid JSON: {e}") from None
    npz = path.with_suffix(".npz")
    arrays = _load_npz(npz.read_bytes()) if npz.exists() else {}
    return graph_from_json(d, arrays)


def graphs_equal(a: Graph, b: Graph) -> bool:
    """Structural equality including constant data, dtype and bit patterns."""
    if json.dumps(graph_to_json(a), sort_keys=True) != json.dumps(graph_to_json(b), sort_keys=True):
        return False
    ca, cb = _all_constants(a), _all_constants(b)
    return ca.keys() == cb.keys() and all(
        ca[k].dtype == cb[k].dtype and ca[k].shape == cb[k].shape and ca[k].tobytes() == cb[k].tobytes()
        for k in ca
    )

"""A fast, lossless container for in-flight data (test cases, worker replies): a JSON header and
raw array bytes. Never pickle; .npz stays the on-disk format of saved graphs, but zip archives
cost more than a small test takes to compile, so the hot path uses this."""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np

from dlcfuzz.errors import IRError

MAGIC = b"DLCFBLB1"
_LEN = struct.Struct("<Q")


def pack(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    table = []
    chunks = []
    offset = 0
    for name, a in arrays.items():
        # tobytes() is C-ordered for any layout; np.ascontiguousarray would turn 0-d into 1-d.
        data = a.tobytes()
        table.append([name, a.dtype.str, list(a.shape), offset, len(data)])
        chunks.append(data)
        offset += len(data)
    header = json.dumps({"meta": meta, "arrays": table}).encode()
    return b"".join([MAGIC, _LEN.pack(len(header)), header, *chunks])


def unpack(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        if not data.startswith(MAGIC):
            raise ValueError("bad magic")
        (n,) = _LEN.unpack_from(data, len(MAGIC))
        start = len(MAGIC) + _LEN.size
        header = json.loads(data[start:start + n])
        base = start + n
        arrays = {}
        for name, dtype, shape, off, size in header["arrays"]:
            dt = np.dtype(dtype)
            if dt.hasobject:
                raise ValueError("object arrays are not allowed")
            buf = data[base + off:base + off + size]
            if len(buf) != size:
                raise ValueError("truncated")
            arrays[name] = np.frombuffer(buf, dtype=dt).reshape(shape).copy()
        return header["meta"], arrays
    except (ValueError, KeyError, TypeError, struct.error, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IRError(f"corrupt blob: {type(e).__name__}: {e}") from None


def blob_digest(blob: bytes) -> int:
    """32-bit digest of a test (a compacted or light test's regeneration is checked against it)."""
    return int.from_bytes(hashlib.blake2b(blob, digest_size=4).digest(), "little")

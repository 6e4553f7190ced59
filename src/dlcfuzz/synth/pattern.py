"""Optimization patterns: a graph fragment with open inputs ("holes"), the optimizations it targets,
and the abstract constraints that synthesis binds its holes by.

A pattern's graph is an ordinary `Graph`: its inputs are the holes (values the fragment needs from
whatever context it is spliced into), its constants are its own weights, its outputs are the values
it leaves dangling for the succeeding context. Concrete shapes and dtypes are kept as one example
instantiation; `Hole` abstracts each to a rank and a dtype class (OATest's abstraction), which is
what binding a context value requires before the pattern is re-concretized for that value.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlcfuzz.errors import DlcfuzzError
from dlcfuzz.ir import Graph, dumps, loads
from dlcfuzz.ir.types import FLOATS, INTS, TensorType

FORMAT = "dlcfuzz-patterns/1"
GRANULARITIES = ("subgraph", "block")


def dtype_class(dtype: str) -> str:
    """float | int | bool: what a hole's dtype is abstracted to."""
    return "float" if dtype in FLOATS else "int" if dtype in INTS else "bool"


@dataclass(frozen=True)
class Hole:
    """An open input of a pattern: its abstract constraint and the example type it was cut with."""

    name: str
    rank: int
    dtype_class: str
    example: TensorType

    def accepts(self, t: TensorType) -> bool:
        """Whether a context value of type `t` can bind this hole without a bridge."""
        return t.rank == self.rank and dtype_class(t.dtype) == self.dtype_class


@dataclass
class Pattern:
    name: str
    graph: Graph
    targets: dict[str, list[str]]  # compiler (`Backend.pattern_targets()`) -> the optimizations it targets
    granularity: str = "subgraph"
    source: str = "library"  # library | onnx:FILE | pytest:TEST
    meta: dict[str, Any] = field(default_factory=dict)
    # what synthesis derives from the pattern (its usable form, its variants: synthesize.py), kept with it: a
    # pattern is never changed once made, and campaigns of one process share the shipped ones (`campaign_patterns`)
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def holes(self) -> list[Hole]:
        return [Hole(v.name, v.type.rank, dtype_class(v.type.dtype), v.type) for v in self.graph.inputs]

    def targets_for(self, targets_name: str) -> list[str]:
        """The optimizations this pattern targets on the compiler patterns name `targets_name`
        (`Backend.pattern_targets()`: a wrapper, such as a planted fault, names what it wraps)."""
        return list(self.targets.get(targets_name, []))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "targets": self.targets, "granularity": self.granularity, "source": self.source,
                "meta": self.meta, "holes": [{"name": h.name, "rank": h.rank, "dtype_class": h.dtype_class}
                                             for h in self.holes],
                "ops": sorted(self.graph.ops_used()),
                "graph": base64.b64encode(dumps(self.graph)).decode("ascii")}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Pattern:
        return Pattern(d["name"], loads(base64.b64decode(d["graph"])), {k: list(v) for k, v in d["targets"].items()},
                       d.get("granularity", "subgraph"), d.get("source", "library"), dict(d.get("meta", {})))


def save_patterns(patterns: list[Pattern], path: str | Path, source: dict[str, Any] | None = None) -> Path:
    """Write a pattern file (gzip-compressed when its name ends in .gz, a tenth of the size: what
    ships is); `source` records where the patterns came from (corpus, command, date)."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    head: dict[str, Any] = {"format": FORMAT}
    if source:
        head["source"] = source
    text = json.dumps({**head, "patterns": [p.to_json() for p in patterns]}, indent=0) + "\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), mtime=0))  # mtime 0: the same patterns, the same bytes
    else:
        path.write_text(text)
    return path


def read_pattern_file(path: str | Path) -> tuple[list[Pattern], dict[str, Any]]:
    """The patterns of a pattern file and its recorded source ({} when it records none)."""
    try:
        data = Path(path).read_bytes()
        d = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
        if d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        return [Pattern.from_json(p) for p in d["patterns"]], dict(d.get("source") or {})
    except (OSError, ValueError, KeyError, TypeError, EOFError) as e:  # gzip.BadGzipFile is an OSError
        raise DlcfuzzError(f"cannot read patterns from {path}: {e}") from None


def load_patterns(path: str | Path) -> list[Pattern]:
    return read_pattern_file(path)[0]


def shipped_pattern_file(targets_name: str) -> Path | None:
    """The pattern file mined from the compiler's own tests that ships with dlcfuzz (package data
    `synth/data/<targets_name>.json.gz`, named by `Backend.pattern_targets()`), or None when none ships."""
    from importlib import resources

    f = resources.files("dlcfuzz.synth").joinpath("data", f"{targets_name}.json.gz")
    return Path(str(f)) if f.is_file() else None


def shipped_patterns(compiler: str) -> list[Pattern]:
    path = shipped_pattern_file(compiler)
    return load_patterns(path) if path is not None else []

"""The known-bugs register: upstream bugs a campaign should not report as new.

Each compiler package may hold `known_bugs.json`; a user adds entries with files named by `--known
FILE` or by the environment variable DLCFUZZ_KNOWN_BUGS (several files separated by the OS's path
separator). A file:

    {"compiler": "onnxruntime", "compilers": ["onnxruntime", "planted"], "release": "onnxruntime 1.32.0",
     "intro": "...", "bugs": [
       {"id": "ort-fuse-relu-clip-int64", "tracker": "https://github.com/...", "text": "markdown for the README",
        "match": {"category": ["unexpected-error"], "ops_all": ["clip", "relu"], "ops_subset": [...],
                  "dtypes_any": ["int64"], "config": "regex", "message": "regex", "attrs": "regex"}}]}

`tracker` is an upstream issue that was found; without one the bug is "reported by dlcfuzz, not yet
filed upstream". A finding matches an entry when every condition of its `match` holds (`message`:
the finding's detail and key without its optimization set; `config`: its configurations and that set; `attrs`: its
reduced graph's nodes, one `op{name=value, ...}` a line, attribute names sorted (FindingFacts.attrs: for an
operator with two bugs told apart by their attributes only, or a programs finding's statement by what its attributes
name, e.g. the replacement pattern a spliced `pattern` statement calls; no match where the finding has no reduced
graph or program); an entry
without `match` documents a bug the campaigns never report, e.g. one on an allow-list). The match is
done when findings are listed or reported, so a register extended after a campaign applies to it.
A finding whose blamed configurations all run another compiler (OpenVINO's `ort` cross-check runs
onnxruntime: `Backend.probe_identity`) is matched against that compiler's entries too, after its own.
Entries are tried in file order and the first match wins: an entry narrow enough to name one bug goes
before a broad one whose operator can sit beside it in an unreduced graph (a Slice shape difference beside
an ArgMax is not ArgMax's -1 bug).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dlcfuzz.backends import backend_facts, known_bug_files, registry_name
from dlcfuzz.engine.clusters import FindingFacts
from dlcfuzz.errors import UsageError
from dlcfuzz.oracle.verdict import blamed_configs

ENV_VAR = "DLCFUZZ_KNOWN_BUGS"
NOT_FILED = "reported by dlcfuzz, not yet filed upstream"
MATCH_FIELDS = ("category", "ops_all", "ops_any", "ops_subset", "dtypes_any", "config", "message", "attrs")


@dataclass(frozen=True)
class KnownBug:
    id: str
    compilers: tuple[str, ...]
    text: str
    tracker: str | None = None
    match: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def ref(self) -> str:
        return self.tracker or NOT_FILED

    def matches(self, f: FindingFacts, detail: str = "") -> bool:
        if not self.match or registry_name(f.compiler) not in self.compilers:
            return False
        m = self.match
        if "category" in m and f.category not in m["category"]:
            return False
        if "ops_all" in m and not set(m["ops_all"]) <= f.ops:
            return False
        if "ops_any" in m and not set(m["ops_any"]) & f.ops:
            return False
        if "ops_subset" in m and not (f.ops and f.ops <= set(m["ops_subset"])):
            return False
        if "dtypes_any" in m and not set(m["dtypes_any"]) & f.dtypes:
            return False
        if "config" in m and not re.search(m["config"], " ".join([*f.configs, f.opts])):
            return False
        if "message" in m and not re.search(m["message"], f"{detail}\n{_without_opts(f.key)}"):
            return False
        if "attrs" in m and not re.search(m["attrs"], f.attrs):
            return False
        return True


def _without_opts(key: str) -> str:
    """A finding's key without its optimization set: `message` is matched against what the compiler
    said, and an entry for one optimization's error ("FuseReluClip") must not claim every wrong result
    whose unminimized set lists that optimization; `config` matches optimization sets."""
    return re.sub(r"\|opts=[^|]*", "", key)


@dataclass
class RegisterFile:
    compiler: str
    release: str
    intro: str
    bugs: list[KnownBug]
    source: Path


def _read(path: Path) -> RegisterFile:
    try:
        d = json.loads(path.read_text())
    except OSError as e:
        raise UsageError(f"known-bugs file {path}: {e.strerror}") from None
    except ValueError as e:
        raise UsageError(f"known-bugs file {path} is not valid JSON: {e}") from None
    try:
        compilers = tuple(d.get("compilers") or [d["compiler"]])
        bugs = []
        for b in d["bugs"]:
            unknown = set(b.get("match") or {}) - set(MATCH_FIELDS)
            if unknown:
                raise UsageError(f"known-bugs file {path}: bug {b['id']}: unknown match field {sorted(unknown)[0]}")
            for k in ("config", "message", "attrs"):
                if k in (b.get("match") or {}):
                    re.compile(b["match"][k])
            bugs.append(KnownBug(b["id"], compilers, b["text"], b.get("tracker"), b.get("match") or {}))
    except (KeyError, TypeError) as e:
        raise UsageError(f"known-bugs file {path}: missing or malformed field {e}") from None
    except re.error as e:
        raise UsageError(f"known-bugs file {path}: bad regular expression: {e}") from None
    return RegisterFile(d["compiler"], d.get("release", ""), d.get("intro", ""), bugs, path)


def packaged_files() -> list[Path]:
    """The register files shipped in the compiler packages, in name order."""
    return known_bug_files()


class Register:
    """The known bugs of every compiler: the packaged files, then the user's."""

    def __init__(self, extra: list[str | Path] | None = None, use_env: bool = True) -> None:
        paths = packaged_files()
        user = [Path(p) for p in (extra or [])]
        if use_env and os.environ.get(ENV_VAR):
            user += [Path(p) for p in os.environ[ENV_VAR].split(os.pathsep) if p]
        for p in user:
            if not p.is_file():
                raise UsageError(f"known-bugs file {p} does not exist")
        self.files = [_read(p) for p in [*paths, *user]]

    @property
    def bugs(self) -> list[KnownBug]:
        return [b for f in self.files for b in f.bugs]

    def match(self, f: FindingFacts, detail: str = "") -> KnownBug | None:
        """The first known bug the finding matches (the user's entries come last: packaged ones win); then, when
        every configuration its verdict blames runs one other compiler (a cross-check), that compiler's first."""
        own = next((b for b in self.bugs if b.matches(f, detail)), None)
        if own is not None:
            return own
        blamed = blamed_configs(f.category, f.configs, detail)
        runs = {config_compiler(f.compiler, c) for c in blamed}
        if len(runs) != 1 or runs == {registry_name(f.compiler)}:
            return None
        other = replace(f, compiler=runs.pop(), configs=blamed)
        return next((b for b in self.bugs if b.matches(other, detail)), None)


@functools.lru_cache(maxsize=256)
def config_compiler(compiler: str, config: str) -> str:
    """The registered compiler that configuration `config` of a `compiler` campaign runs: the backend's
    `probe_identity` of it (a cross-check configuration runs another compiler); the campaign's own compiler for
    a configuration the backend does not list (a sampled one) or a backend not installed here."""
    backend = backend_facts(compiler)
    try:
        c = backend.configs().get(config)
        return registry_name(backend.probe_identity(c)[0]) if c is not None else registry_name(compiler)
    except Exception:  # the defaults of an uninstalled compiler's facts list no configurations
        return registry_name(compiler)


def readme_section(register: Register | None = None) -> str:
    """The README's "Known compiler bugs" lists, generated from the packaged register."""
    reg = register or Register(use_env=False)
    lines = ["Found by dlcfuzz in the pinned releases. Generated from the known-bugs register "
             "(`backends/<compiler>/known_bugs.json`, `python scripts/known_bugs.py`); a finding that matches "
             "an entry is listed as `known: <tracker ref>` and not counted as new. Add your own with "
             f"`--known FILE` or `{ENV_VAR}`."]
    for f in reg.files:
        lines += ["", f"{f.release}:" if f.release else f"{f.compiler}:"]
        if f.intro:
            lines.append(f.intro)
        for b in f.bugs:
            text = b.text.strip().replace("\n", "\n  ")
            lines.append(f"- {text} ({b.tracker if b.tracker else NOT_FILED})")
    return "\n".join(lines) + "\n"

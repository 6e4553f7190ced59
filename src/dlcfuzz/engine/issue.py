"""An upstream issue in Markdown for one finding: title, versions and environment, the standalone
reproducer, expected vs actual, the minimal configuration difference (and the fields the compiler's own bug
template asks of fuzzer reports, where its backend names one: `Backend.issue_checklist`)."""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from dlcfuzz.backends import Backend, backend_facts
from dlcfuzz.engine.clusters import FindingFacts, facts_of, finding_folder
from dlcfuzz.engine.known import KnownBug
from dlcfuzz.engine.scrub import scrub
from dlcfuzz.oracle import categories as C
from dlcfuzz.oracle.categories import expected_text
from dlcfuzz.oracle.opinions import SUSPECTED, SecondOpinion

# why the model is valid, by the compiler's front door (ONNX models are checked by onnx's checker)
VALID_BECAUSE = {"onnx": "ONNX's checker and the operators' specification accept it",
                 "code": "the framework runs it eagerly, and the operators' specification accepts its types and shapes"}


def expected_behaviour(category: str, backend: Backend, configs: tuple[str, ...] | list[str] = ()) -> str:
    """What the compiler should have done: the category's text, with why the model is valid from the
    front door of the finding's configurations (ONNX-checked only when every one of them takes ONNX)."""
    fronts = {backend.front_door(c) for c in configs or ("",)}
    front = "onnx" if fronts == {"onnx"} else "code"
    return expected_text(category).format(valid=VALID_BECAUSE[front])


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


_HEADER = re.compile(r"^(dlcfuzz finding \d+:|signature [0-9a-f]+$|key |test \d+, seed )")


@dataclass
class Issue:
    title: str
    markdown: str


def environment(backend: Backend, configs: tuple[str, ...] | list[str], version: str) -> list[tuple[str, str]]:
    """(what, version) rows: no paths, no host names. The versions of the packages are this machine's
    (where the campaign usually ran); the compiler's is the one the finding recorded. The packages are
    those the backend lists for the finding's configurations."""
    packages = dict.fromkeys(p for c in (configs or [""]) for p in backend.issue_packages(c))
    rows = [("compiler", version), ("python", platform.python_version()),
            ("OS", f"{platform.system()} {platform.release()} ({platform.machine()})")]
    for dist in (*packages, "numpy", "onnx"):
        try:
            rows.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            continue
    return rows


def observation(detail: str) -> str:
    """The compiler's message or the mismatch dlcfuzz saw, without dlcfuzz's header, frames and paths."""
    lines = [ln for ln in (detail or "").splitlines() if not _HEADER.match(ln)]
    return scrub("\n".join(lines).strip())


def configuration_difference(facts: FindingFacts, backend: Backend, tested: list[str] | None = None,
                             detail: str = "") -> list[str]:
    """Which configurations show the finding and which do not, with the options of each."""
    try:
        all_configs = backend.configs()
    except Exception:  # a compiler that is not installed here: the names are all there is
        all_configs = {}

    def named(name: str) -> str:
        opts = all_configs[name].options if name in all_configs else None
        return f"`{name}`" + (f" (options `{json.dumps(opts, sort_keys=True)}`)" if opts else "")

    shown, others = list(facts.configs), [n for n in tested or [] if n not in facts.configs]
    if facts.category in (C.INCONSISTENCY, C.INCONSISTENT_REJECTION) and len(shown) >= 2:
        # the observation names the configuration that departs first: "ort-all differs from ort-disable ..."
        first = observation(detail).split(" ", 1)[0].rstrip(",:")
        if first in shown:
            others = [n for n in shown if n != first] + others
            shown = [first]
    out = []
    if facts.opts:
        out.append(f"Minimal optimization set that shows it (reduced by delta debugging): `{facts.opts}`.")
    out += [f"Shows it: {named(n)}" for n in shown]
    out += [f"Does not show it: {named(n)}" for n in others]
    return out


def run_reproducer(folder: Path, timeout_s: float = 120.0) -> tuple[int | None, str]:
    """Exit status and the output's tail of the finding's `repro.py` (None: it timed out)."""
    try:
        p = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"(no result within {timeout_s:.0f} s)"
    return p.returncode, scrub((p.stdout + p.stderr)[-3000:])


def issue_for(run: Path, row: dict[str, Any], known: KnownBug | None = None, run_repro: bool = False,
              duplicates: int = 0, tested: list[str] | None = None) -> Issue:
    """The issue of a finding (a store row); `tested`: the configurations its test compared."""
    folder = finding_folder(run, row)
    facts = facts_of(row, folder)
    compiler, version = row.get("compiler") or "", row.get("version") or ""
    backend = backend_facts(compiler)
    what = (f"{', '.join(sorted(facts.ops))} ({'/'.join(sorted(facts.dtypes))})" if facts.ops
            else (facts.message[:60] or facts.category))
    where = facts.opts or ", ".join(facts.configs)
    title = f"[{version}] {facts.category} on {what} with {where}"
    opinion = SecondOpinion.from_json(row.get("opinions"))
    suspected = opinion is not None and opinion.suspected_reference_error
    if suspected:  # first thing anyone reads: not for upstream until our reference is cleared
        title = f"[{SUSPECTED.upper()}: DO NOT FILE UPSTREAM] {title}"
    repro_path = folder / "repro.py"
    repro = scrub(repro_path.read_text()) if repro_path.exists() else None
    md = [f"# {title}", ""]
    if suspected:
        md += [f"> **dlcfuzz: {SUSPECTED.upper()}.** Independent evaluators agree with the compiler, not with "
               "dlcfuzz's NumPy reference: this is dlcfuzz's bug until shown otherwise. Check the reference of "
               "these operators before filing anything upstream (second opinion below).", ""]
    if known is not None:
        md += [f"> dlcfuzz: this matches a known bug ({known.ref}): `{known.id}`.", ""]
    md += ["## Describe the bug", "",
           f"dlcfuzz (a differential fuzzer of deep-learning compilers) found {article(facts.category)} **{facts.category}** finding in {version}"
           f" with configuration {', '.join(f'`{c}`' for c in facts.configs)}."
           f" The reduced model has {row.get('reduced_nodes') or row.get('nodes') or '?'} node(s)"
           f" ({', '.join(sorted(facts.ops)) or 'operators unknown'};"
           f" dtypes {', '.join(sorted(facts.dtypes)) or 'unknown'})."
           + (f" It may not be minimal: {row['not_minimal']}." if row.get("not_minimal") else "")
           + (f" The campaign hit it {1 + duplicates} times." if duplicates else ""), ""]
    md += ["## Versions and environment", "", "| | |", "|---|---|"]
    md += [f"| {k} | {v} |" for k, v in environment(backend, facts.configs, version)]
    md += ["", "## To reproduce", ""]
    if repro:
        md += ["Standalone: the compiler's public API, NumPy and onnx only. `python repro.py` prints "
               "\"BUG REPRODUCED\" and exits 1 while the bug is present, exits 0 once it is fixed.", "",
               "```python", repro.rstrip(), "```", ""]
    else:
        md += ["(dlcfuzz wrote no standalone reproducer for this finding: see the observation below.)", ""]
    md += ["## Expected behavior", "", expected_behaviour(facts.category, backend, facts.configs), "",
           "## Actual behavior", "", "```", observation(row.get("detail") or "")[:4000] or "(no message)", "```", ""]
    if run_repro and repro:
        code, out = run_reproducer(folder)
        md += [f"Output of `python repro.py` (exit status {code}):", "", "```", out.strip(), "```", ""]
    if opinion is not None:
        md += ["## Second opinion (independent evaluators of the reduced model)", "", "```", opinion.text(), "```", ""]
    md += ["## Minimal configuration difference", ""]
    md += [f"- {line}" for line in configuration_difference(facts, backend, tested, row.get("detail") or "")] + [""]
    checklist = next((c for c in map(backend.issue_checklist, facts.configs or ("",)) if c is not None), None)
    if checklist is not None:
        md += [f"## {checklist.heading}", "", checklist.intro, ""]
        md += [f"- [ ] {c}" for c in checklist.checks]
        md += ["", "### Error logs", "", "```", observation(row.get("detail") or "")[:2000], "```", "",
               "### Versions", "", checklist.versions, ""]
    md += ["---", f"Found by dlcfuzz (finding {row['id']}, signature `{row.get('signature')}`)."]
    return Issue(title, "\n".join(md) + "\n")

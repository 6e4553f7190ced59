"""An upstream issue in Markdown for one finding: title, versions and environment, the standalone
reproducer, expected vs actual, the minimal configuration difference (and, for PyTorch, the fields
its torch.compile bug template asks of fuzzer reports)."""

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

from dlcfuzz.engine.clusters import FindingFacts, facts_of, finding_folder
from dlcfuzz.engine.known import KnownBug
from dlcfuzz.engine.scrub import scrub

# what the compiler should have done, by finding category
EXPECTED = {
    "wrong-result": "The outputs equal those of the operators' specification (dlcfuzz's NumPy reference), within "
                    "the tolerance of the dtype.",
    "inconsistency": "Every configuration computes the same outputs (within the tolerance of the dtype): an "
                     "optimization must not change the result.",
    "crash": "The model compiles and runs (it is valid: {valid}), or is rejected with an error; the process "
             "does not die.",
    "hang": "Compiling and running the model finishes within seconds.",
    "unexpected-error": "The model compiles and runs: it is valid ({valid}) and the compiler documents support for "
                        "its operators and dtypes.",
    "inconsistent-rejection": "Every configuration accepts the model, or every configuration rejects it: an "
                              "optimization must not make a valid model fail.",
    "accepted-invalid": "The compiler rejects the model with an error: it breaks a type or shape rule of an operator.",
    "slow": "The optimized build is not slower than the unoptimized one.",
    "metamorphic": "The mutant (equivalent to the seed model by construction) computes the seed's outputs.",
    "mutant-rejected": "The mutant compiles like its seed: it only adds operators the seed already uses.",
}
# why the model is valid, by the compiler's front door (ONNX models are checked by onnx's checker)
VALID_BECAUSE = {"onnx": "ONNX's checker and the operators' specification accept it",
                 "code": "the framework runs it eagerly, and the operators' specification accepts its types and shapes"}
ONNX_FRONT = ("onnxruntime", "planted", "tvm", "openvino")


def expected_behaviour(category: str, compiler: str) -> str:
    front = "onnx" if compiler.split(":")[0] in ONNX_FRONT else "code"
    return EXPECTED.get(category, "The compiler behaves like the reference.").format(valid=VALID_BECAUSE[front])


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


# the distributions each compiler's reproducer uses, for the environment table
PACKAGES = {"onnxruntime": ("onnxruntime",), "planted": ("onnxruntime",), "tvm": ("apache-tvm", "apache-tvm-ffi"),
            "inductor": ("torch",), "xla": ("jax", "jaxlib"), "openvino": ("openvino",)}
# torch.compile's bug template (pytorch/pytorch .github/ISSUE_TEMPLATE/pt2-bug-report.yml) asks fuzzer reports
# to confirm these before adding the label "topic: fuzzer"
PYTORCH_FUZZER_CHECKS = (
    "rtol/atol are at default tolerances",
    "no indices of max/min etc. are compared",
    "eager and torch.compile are compared against a higher-precision baseline (`torch._dynamo.utils.same` "
    "with `fp64_ref`)",
    "the RNG state is equivalent (`torch._inductor.config.fallback_random=True`, the seed reset between runs)",
)
_HEADER = re.compile(r"^(dlcfuzz finding \d+:|signature [0-9a-f]+$|key |test \d+, seed )")


@dataclass
class Issue:
    title: str
    markdown: str


def environment(compiler: str, version: str) -> list[tuple[str, str]]:
    """(what, version) rows: no paths, no host names. The versions of the packages are this machine's
    (where the campaign usually ran); the compiler's is the one the finding recorded."""
    rows = [("compiler", version), ("python", platform.python_version()),
            ("OS", f"{platform.system()} {platform.release()} ({platform.machine()})")]
    for dist in (*PACKAGES.get(compiler.split(":")[0], ()), "numpy", "onnx"):
        try:
            rows.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            continue
    return rows


def observation(detail: str) -> str:
    """The compiler's message or the mismatch dlcfuzz saw, without dlcfuzz's header, frames and paths."""
    lines = [ln for ln in (detail or "").splitlines() if not _HEADER.match(ln)]
    return scrub("\n".join(lines).strip())


def configuration_difference(facts: FindingFacts, compiler: str, tested: list[str] | None = None,
                             detail: str = "") -> list[str]:
    """Which configurations show the finding and which do not, with the options of each."""
    try:
        from dlcfuzz.backends import get_backend

        all_configs = get_backend(compiler).configs()
    except Exception:  # a compiler that is not installed here: the names are all there is
        all_configs = {}

    def named(name: str) -> str:
        opts = all_configs[name].options if name in all_configs else None
        return f"`{name}`" + (f" (options `{json.dumps(opts, sort_keys=True)}`)" if opts else "")

    shown, others = list(facts.configs), [n for n in tested or [] if n not in facts.configs]
    if facts.category in ("inconsistency", "inconsistent-rejection") and len(shown) >= 2:
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
    what = (f"{', '.join(sorted(facts.ops))} ({'/'.join(sorted(facts.dtypes))})" if facts.ops
            else (facts.message[:60] or facts.category))
    where = facts.opts or ", ".join(facts.configs)
    title = f"[{version}] {facts.category} on {what} with {where}"
    repro_path = folder / "repro.py"
    repro = scrub(repro_path.read_text()) if repro_path.exists() else None
    md = [f"# {title}", ""]
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
    md += [f"| {k} | {v} |" for k, v in environment(compiler, version)]
    md += ["", "## To reproduce", ""]
    if repro:
        md += ["Standalone: the compiler's public API, NumPy and onnx only. `python repro.py` prints "
               "\"BUG REPRODUCED\" and exits 1 while the bug is present, exits 0 once it is fixed.", "",
               "```python", repro.rstrip(), "```", ""]
    else:
        md += ["(dlcfuzz wrote no standalone reproducer for this finding: see the observation below.)", ""]
    md += ["## Expected behavior", "", expected_behaviour(facts.category, compiler), "",
           "## Actual behavior", "", "```", observation(row.get("detail") or "")[:4000] or "(no message)", "```", ""]
    if run_repro and repro:
        code, out = run_reproducer(folder)
        md += [f"Output of `python repro.py` (exit status {code}):", "", "```", out.strip(), "```", ""]
    md += ["## Minimal configuration difference", ""]
    md += [f"- {line}" for line in configuration_difference(facts, compiler, tested, row.get("detail") or "")] + [""]
    if compiler.split(":")[0] in ("inductor", "torch"):
        md += ["## torch.compile fuzzer checklist", "",
               "The torch.compile bug template asks issues generated by a fuzzer to confirm these before adding "
               "the label \"topic: fuzzer\" (check each against the reproducer above):", ""]
        md += [f"- [ ] {c}" for c in PYTORCH_FUZZER_CHECKS]
        md += ["", "### Error logs", "", "```", observation(row.get("detail") or "")[:2000], "```", "",
               "### Versions", "", "Paste the output of `python -m torch.utils.collect_env` here.", ""]
    md += ["---", f"Found by dlcfuzz (finding {row['id']}, signature `{row.get('signature')}`)."]
    return Issue(title, "\n".join(md) + "\n")

"""Regenerate the operator table in README.md from the registry (tests fail when it is stale).

  python scripts/ops_table.py          # rewrite README.md in place
  python scripts/ops_table.py --check  # exit 1 when README.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

BEGIN = "<!-- ops-table:begin -->"
END = "<!-- ops-table:end -->"
README = Path(__file__).resolve().parent.parent / "README.md"


LOWERING_TARGETS = ("onnx", "relax", "torch", "jax")


def table() -> str:
    from dlcfuzz.lower.onnx_scope import EXCLUDED_DOMAINS, EXCLUDED_OPERATORS, EXCLUDED_TYPES
    from dlcfuzz.lower.registry import load_target
    from dlcfuzz.ops import all_ops
    from dlcfuzz.ops.regions import REGION_OPS

    targets = {name: load_target(name) for name in LOWERING_TARGETS}
    specs = all_ops() + list(REGION_OPS.values())  # the regions (if, loop, scan) last: never drawn, built around subgraphs
    lines = [f"{len(specs)} operators. Per target: a lowering rule, or `gap` (documented, see the target's module).", "",
             "| operator | family | ONNX | dtypes | " + " | ".join(LOWERING_TARGETS) + " |",
             "|---|---|---|---|" + "---|" * len(LOWERING_TARGETS)]
    for s in specs:
        cells = ["gap" if t.gap_of(s.name) is not None else "yes" for t in targets.values()]
        lines.append(f"| {s.name} | {s.family} | {', '.join(s.onnx_ops)} | {', '.join(s.dtypes)} | " + " | ".join(cells) + " |")
    lines += ["", "Left out of ONNX on purpose (`dlcfuzz/lower/onnx_scope.py`; the conformance bench counts them apart):", "",
              "| left out | why |", "|---|---|"]
    lines += [f"| {op} | {why} |" for op, why in sorted(EXCLUDED_OPERATORS.items())]
    lines += [f"| domain {d} | {why} |" for d, why in sorted(EXCLUDED_DOMAINS.items())]
    lines += [f"| type {t} | {why} |" for t, why in sorted(EXCLUDED_TYPES.items())]
    return "\n".join(lines)


def render(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main() -> int:
    text = README.read_text()
    new = render(text)
    if "--check" in sys.argv:
        if new != text:
            print("README.md operator table is stale: run python scripts/ops_table.py")
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

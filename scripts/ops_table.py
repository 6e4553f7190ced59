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


def table() -> str:
    from dlcfuzz.ops import all_ops

    specs = all_ops()
    lines = [f"{len(specs)} operators.", "", "| operator | family | ONNX | dtypes |", "|---|---|---|---|"]
    for s in specs:
        lines.append(f"| {s.name} | {s.family} | {', '.join(s.onnx_ops)} | {', '.join(s.dtypes)} |")
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

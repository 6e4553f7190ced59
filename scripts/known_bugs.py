"""Regenerate the README's "Known compiler bugs" lists from the known-bugs register
(`src/dlcfuzz/backends/<compiler>/known_bugs.json`; tests fail when the README is stale).

  python scripts/known_bugs.py          # rewrite README.md in place
  python scripts/known_bugs.py --check  # exit 1 when README.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

BEGIN = "<!-- known-bugs:begin -->"
END = "<!-- known-bugs:end -->"
README = Path(__file__).resolve().parent.parent / "README.md"


def render(text: str) -> str:
    from dlcfuzz.engine.known import readme_section

    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{readme_section()}{END}{tail}"


def main() -> int:
    text = README.read_text()
    new = render(text)
    if "--check" in sys.argv:
        if new != text:
            print("README.md known-bugs lists are stale: run python scripts/known_bugs.py")
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

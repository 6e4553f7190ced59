"""What the program strategies' campaign tests share: the planted finding's folder and its standalone reproducer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dlcfuzz.engine.store import Store
from dlcfuzz.oracle import categories as C


def planted_finding_folder(campaign: Path) -> Path:
    """The folder of the campaign's first finding; every finding is an inconsistency with eager."""
    found = Store(campaign / "store.sqlite", create=False).findings()
    assert found and all(f["category"] == C.INCONSISTENCY for f in found)
    return min((campaign / "findings").iterdir())  # by number: iterdir's order is the file system's


def assert_reproducer_fires_standalone(folder: Path) -> None:
    """repro.py, run isolated (`python -I`: no dlcfuzz on the path), exits 1 with BUG REPRODUCED and imports no dlcfuzz."""
    script = folder / "repro.py"
    res = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 1 and "BUG REPRODUCED" in res.stdout, res.stdout + res.stderr
    imports = [ln for ln in script.read_text().splitlines() if ln.startswith(("import", "from"))]
    assert "dlcfuzz" not in "\n".join(imports)

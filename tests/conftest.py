"""Test configuration: make the shared harness importable as `op_harness` and `tests.op_harness`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

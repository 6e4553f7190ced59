"""Test configuration: make the shared harness importable as `op_harness` and `tests.op_harness`; Hypothesis
derandomized, so that a run is the same in every process and on every machine (its examples come from the test's
own code, not from a random seed)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis import settings  # noqa: E402

settings.register_profile("dlcfuzz", derandomize=True)
settings.load_profile("dlcfuzz")

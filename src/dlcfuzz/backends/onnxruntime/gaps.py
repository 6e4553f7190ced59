"""Known ONNXRuntime gaps: operator -> input-0 dtype -> the documented upstream reason it fails
there (an allow-list with references, never a silent skip); campaigns leave these out so that new
bugs stand out. None is documented for onnxruntime 1.32.0: every operator and dtype dlcfuzz
generates runs there (the capability probe still records what a given release lacks)."""

from __future__ import annotations

KNOWN_GAPS: dict[str, dict[str, str]] = {}

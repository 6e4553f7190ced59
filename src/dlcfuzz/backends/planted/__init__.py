"""Planted-fault backends (ONNXRuntime with a deliberate fault in its optimized configuration), used
to prove the oracles: see `backend.py`."""

from dlcfuzz.backends.planted.backend import FAULTS, MARK, PLANTED_FUSIONS, PlantedBackend, misevaluate, misfuse

__all__ = ["FAULTS", "MARK", "PLANTED_FUSIONS", "PlantedBackend", "misevaluate", "misfuse"]

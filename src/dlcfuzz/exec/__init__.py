"""Sandboxed execution: persistent worker processes, killed and respawned on crash, hang or OOM."""

from dlcfuzz.exec.pool import PoolStats, TaskResult, WorkerPool, WorkerStartupError, progress

__all__ = ["PoolStats", "TaskResult", "WorkerPool", "WorkerStartupError", "progress"]

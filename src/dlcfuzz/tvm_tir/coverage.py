"""Pluggable coverage sources for the Tzer loop. Each yields a set of string items per test.

- `ir`: IR-state coverage that needs no instrumented compiler: which node kinds each pass
  added or removed (and whether it changed the function at all), and AST shape features of the
  tested function (parent->child node kinds, loop kinds by nesting depth, intrinsic calls).
- `python`: line coverage of TVM's own Python modules (sys.settrace restricted to files under the
  tvm package: the script printer/parser, pass wrappers, the build driver, pipelines).
- `sancov:LIB`: edge counters of a SanitizerCoverage-instrumented shared library (an instrumented
  libtvm, see README "Low-level IR (Tzer)"); `SanCov` reads them through the small runtime below.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SOURCES = ("ir", "python", "sancov")


def parse_sources(text: str) -> list[str]:
    """'ir,python' or 'ir,sancov:/path/libtvm.so' -> the list; raises ValueError on an unknown name."""
    out = [s.strip() for s in text.split(",") if s.strip()]
    for s in out:
        if s.split(":", 1)[0] not in SOURCES:
            raise ValueError(f"unknown coverage source {s!r} (choose from ir, python, sancov:LIB)")
        if s.startswith("sancov") and ":" not in s:
            raise ValueError("sancov needs the instrumented library: sancov:/path/to/lib.so")
    return out


# ---- (a) IR state -------------------------------------------------------------

def shape_features(func: Any) -> set[str]:
    from dlcfuzz.tvm_tir.tir import get, node_kind, slots

    items: set[str] = set()
    stack = [(func.body, "root", 0)]
    while stack:
        n, parent, depth = stack.pop()
        k = node_kind(n)
        items.add(f"ir:edge:{parent}>{k}")
        if k == "For":
            items.add(f"ir:loop:{int(n.kind)}@{min(depth, 4)}")
            depth += 1
        elif k == "Call":
            items.add(f"ir:call:{n.op.name}")
        for s in slots(n):
            stack.append((get(n, s), k, depth))
    return items


def pass_features(name: str, before: Any, after: Any) -> set[str]:
    """What one pass did: changed or not, and the node kinds whose counts went up or down."""
    import tvm_ffi

    from dlcfuzz.tvm_tir.tir import kinds_histogram

    if tvm_ffi.structural_equal(before, after):
        return {f"ir:pass:{name}:same"}
    hb, ha = kinds_histogram(before.body), kinds_histogram(after.body)
    items = {f"ir:pass:{name}:changed"}
    for k in set(hb) | set(ha):
        d = ha.get(k, 0) - hb.get(k, 0)
        if d:
            items.add(f"ir:pass:{name}:{k}:{'+' if d > 0 else '-'}")
    return items


# ---- (b) Python lines of the compiler -------------------------------------------

class PythonLines:
    """Line coverage of files under one package directory, via sys.settrace (Python 3.11)."""

    def __init__(self, package_dir: str) -> None:
        self.root = os.path.realpath(package_dir) + os.sep
        self.lines: set[tuple[str, int]] = set()
        self._mine: dict[str, bool] = {}

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._local

    def _global(self, frame: Any, event: str, arg: Any) -> Any:
        fn = frame.f_code.co_filename
        mine = self._mine.get(fn)
        if mine is None:
            mine = self._mine[fn] = os.path.realpath(fn).startswith(self.root)
        if not mine:
            return None
        self.lines.add((fn, frame.f_lineno))
        return self._local

    @contextmanager
    def tracing(self) -> Iterator[None]:
        old = sys.gettrace()
        sys.settrace(self._global)
        threading.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(old)
            threading.settrace(old)  # type: ignore[arg-type]

    def take(self) -> set[str]:
        out = {f"py:{os.path.relpath(os.path.realpath(f), self.root)}:{n}" for f, n in self.lines}
        self.lines = set()
        return out


# ---- (c) SanitizerCoverage ------------------------------------------------------

# The runtime an instrumented library is linked with (gcc/clang -fsanitize-coverage=trace-pc):
# every basic block calls __sanitizer_cov_trace_pc(); the edge (previous block, this block) is
# hashed AFL-style into a map of 8-bit hit counters that the adapter reads and clears.
SANCOV_RUNTIME = r"""
#include <stdint.h>
#include <string.h>
#define DLCFUZZ_MAP_SIZE (1u << 16)
static uint8_t dlcfuzz_map[DLCFUZZ_MAP_SIZE];
static __thread uintptr_t dlcfuzz_prev;
__attribute__((no_sanitize_coverage, visibility("default")))
void __sanitizer_cov_trace_pc(void) {
  uintptr_t cur = (uintptr_t)__builtin_return_address(0);
  cur = (cur >> 4) ^ (cur << 8);
  uint32_t idx = (uint32_t)((cur ^ dlcfuzz_prev) & (DLCFUZZ_MAP_SIZE - 1));
  if (dlcfuzz_map[idx] != 255) dlcfuzz_map[idx]++;
  dlcfuzz_prev = cur >> 1;
}
__attribute__((no_sanitize_coverage, visibility("default")))
uint8_t *dlcfuzz_sancov_map(void) { return dlcfuzz_map; }
__attribute__((no_sanitize_coverage, visibility("default")))
uint32_t dlcfuzz_sancov_size(void) { return DLCFUZZ_MAP_SIZE; }
__attribute__((no_sanitize_coverage, visibility("default")))
void dlcfuzz_sancov_reset(void) { memset(dlcfuzz_map, 0, DLCFUZZ_MAP_SIZE); dlcfuzz_prev = 0; }
"""


class SanCov:
    """Reads the edge map of a library linked with SANCOV_RUNTIME (loaded RTLD_GLOBAL, so that an
    instrumented libtvm loaded later by `import tvm` resolves to the same counters)."""

    def __init__(self, library: str) -> None:
        try:
            self.lib = ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
            self.lib.dlcfuzz_sancov_map.restype = ctypes.POINTER(ctypes.c_uint8)
            self.lib.dlcfuzz_sancov_size.restype = ctypes.c_uint32
        except (OSError, AttributeError) as e:
            raise ValueError(f"{library}: not a library linked with the dlcfuzz SanitizerCoverage runtime ({e})") from None
        self.size = int(self.lib.dlcfuzz_sancov_size())
        self.map = self.lib.dlcfuzz_sancov_map()

    def reset(self) -> None:
        self.lib.dlcfuzz_sancov_reset()

    def edges(self) -> dict[int, int]:
        """Edge index -> hit count (bucketed like AFL: 1, 2, 3, 4-7, 8-15, ...) since the last reset."""
        raw = ctypes.string_at(self.map, self.size)
        return {i: _bucket(c) for i, c in enumerate(raw) if c}

    def take(self) -> set[str]:
        items = {f"edge:{i}:{b}" for i, b in self.edges().items()}
        self.reset()
        return items


def _bucket(count: int) -> int:
    return count if count <= 3 else 1 << (count.bit_length() - 1)

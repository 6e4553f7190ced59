"""Normalized signatures for deduplication: numbers, addresses, paths and quoted names masked."""

from __future__ import annotations

import functools
import hashlib
import re

_MASKS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0xX"),
    # a source file keeps its name (pad.cc vs reshape_helper.h tell bugs apart), not its folder
    (re.compile(r"(?:/[\w.\-+]+)*/([\w\-+]+\.(?:py|cc|cpp|cu|h|hpp))\b"), r"\1"),
    (re.compile(r"(/[\w.\-+]+)+(\.so[\.\d]*)?"), "<path>"),
    (re.compile(r"'[^']{0,80}'|\"[^\"]{0,80}\""), "<q>"),
    (re.compile(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b"), "N"),
    # numbered identifiers (lv8, v12, %x3) name values of one program, not a bug; dtypes stay
    (re.compile(r"\b(?!(?:u?int|b?float|complex)\d+\b)([A-Za-z_]+)\d+\b"), r"\1N"),
    (re.compile(r"\s+"), " "),
]
# the compiler's message in a detail text: the first line that is not dlcfuzz's own header
_HEADER = re.compile(r"^(dlcfuzz finding|signature |key |test \d|Traceback|\s*File \"|\s*\^)")
# numbered names and node names that survive `normalize` (v9, _IsNaN8, n4, lv3)
_NAMES = re.compile(r"\b_?[A-Za-z]+_?N\b|\b[a-z]{1,3}N\b")
# shapes, element types and node names in short brackets differ between instances of one bug (long
# parentheses hold the message itself: "rejects (Fail: ...)")
_BRACKETS = re.compile(r"\[[^\[\]]{0,60}\]|\([^()]{0,40}\)")
# Python traceback frames, then the compiler's native frames (its backend's `frame_patterns`), then
# numbered backtrace lines ("  0: name")
_PY_FRAME = r"(?:File \"[^\"]+\", line \d+, in ([\w<>.]+))"
_NUMBERED_FRAME = r"(?:^\s*\d+: (\S+))"


@functools.lru_cache(maxsize=64)
def _frame_regex(native: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join([_PY_FRAME, *(f"(?:{p})" for p in native), _NUMBERED_FRAME]), re.M)


def normalize(text: str) -> str:
    for pat, rep in _MASKS:
        text = pat.sub(rep, text)
    return text.strip()


def top_frames(trace: str, n: int = 3, native: tuple[str, ...] = ()) -> list[str]:
    """Innermost function names from a Python or native backtrace; `native`: the compiler's frame
    patterns (regular expressions with one group, the frame's name: `Backend.frame_patterns`)."""
    frames = [next(g for g in m.groups() if g) for m in _frame_regex(tuple(native)).finditer(trace or "")]
    frames = [f for f in frames if not f.startswith(("_Py", "Py", "<module>"))]
    return frames[-n:]


# ONNXRuntime names the node that failed; the status message after it is the bug (a wrong shape
# upstream fails in whichever kernel reuses its buffer: Tan, Erf, Cast, ... are one finding)
_ORT_NODE = re.compile(r"Non-zero status code returned while running \w+ node\. Name:'[^']*' Status Message: ")


def error_key(error: str, trace: str | None = None, native: tuple[str, ...] = ()) -> str:
    """Exception type + the message's most specific line (TVM's "Check failed" lines), normalized."""
    lines = [_ORT_NODE.sub("", ln.strip()) for ln in (error or "").splitlines() if ln.strip()]
    head = lines[0] if lines else ""
    specific = next((ln for ln in lines if "Check failed" in ln or "Error" in ln.split(":")[0]), head)
    etype = head.split(":", 1)[0]
    return f"{etype}|{normalize(specific)[:160]}|{'/'.join(top_frames(trace or '', native=native))}"


def digest(*parts: str) -> str:
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:12]


def message_class(text: str) -> str:
    """The compiler's message without names, numbers, paths, shapes and node lists."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip() and not _HEADER.match(ln)]
    msg = " ".join(lines[:4])
    msg = normalize(msg)
    msg = _NAMES.sub("<name>", msg)
    for _ in range(3):  # nested brackets, innermost first
        msg = _BRACKETS.sub("<..>", msg)
    return re.sub(r"\s+", " ", msg).strip()[:200]

"""Text shown to a compiler's maintainers: tracebacks without dlcfuzz's own frames, no paths of the
machine that ran the campaign."""

from __future__ import annotations

import re

# `  File "/any/where/dlcfuzz/exec/worker.py", line 47, in run_configs` and the source/caret lines under it
_PY_FRAME = re.compile(r'^(\s*(?:#\s*)?)File "([^"]+)", line \d+, in .*$')  # also inside a comment
_PACKAGE_DIR = re.compile(r"(?:[^\s\"'()]*/)?(site-packages|dist-packages)/")
# an absolute path of two or more components (not part of a URL): its folders are the machine's; also
# glued to a compiler's one-letter option (`g++ -I/usr/... -L/...` in Inductor's C++ compile errors)
_ABS_PATH = re.compile(r"(?:(?<![\w:/.])|(?<=\s-[A-Za-z]))(?:/[\w.\-+@~]+){2,}")
_BASE64_LINE = re.compile(r"^[A-Za-z0-9+/=]{60,}$")
_BASE64_TAIL = re.compile(r"^[A-Za-z0-9+/=]+$")  # the last (short) line of a block, or a short block
_WIN_PATH = re.compile(r"\b[A-Za-z]:\\(?:[\w.\-+ ]+\\)+")


def _is_ours(path: str) -> bool:
    return "/dlcfuzz/" in path.replace("\\", "/")


def strip_frames(text: str) -> str:
    """Python traceback frames whose file is inside dlcfuzz removed (with their source and caret lines)."""
    out: list[str] = []
    skipping = None  # indentation of the frame being dropped
    dropped = 0
    for line in (text or "").splitlines():
        m = _PY_FRAME.match(line)
        if m:
            skipping = m.group(1) if _is_ours(m.group(2)) else None
            if skipping is not None:
                dropped += 1
                continue
        elif skipping is not None and line.startswith(skipping + " ") and line.strip():
            continue  # the frame's source line and its ^^^^ markers
        else:
            skipping = None
        out.append(line)
    if dropped:
        at = next((i for i, ln in enumerate(out) if ln.lstrip("# ").startswith("Traceback")), None)
        if at is not None:
            prefix = "#   " if out[at].startswith("#") else "  "
            out.insert(at + 1, f"{prefix}({dropped} frame{'s' if dropped > 1 else ''} of dlcfuzz left out)")
    return "\n".join(out)


def strip_paths(text: str) -> str:
    """Absolute paths of this machine shortened: installed packages from `site-packages/`, others to
    their file name."""
    lines = (text or "").split("\n")
    data = False  # inside a block of embedded data (a model, inputs): its slashes are no paths
    for i, line in enumerate(lines):
        if i == 0 and line.startswith("#!"):  # a script's interpreter line is no machine path
            continue
        # a block opens with a triple quote; its lines are base64 (the last one short: it once ended
        # in "x/d1", which was cut to ".../d1" and broke a reproducer's input)
        opened = i > 0 and lines[i - 1].endswith('"""')
        data = bool(_BASE64_LINE.match(line)) or (bool(_BASE64_TAIL.match(line)) and (data or opened))
        if data:
            continue
        line = _PACKAGE_DIR.sub(lambda m: f"{m.group(1)}/", line)
        line = _WIN_PATH.sub("", line)
        lines[i] = _ABS_PATH.sub(lambda m: ".../" + m.group(0).rsplit("/", 1)[-1], line)
    return "\n".join(lines)


def scrub(text: str) -> str:
    """What a finding's folder, the report and an issue show of a message or traceback."""
    return strip_paths(strip_frames(text))

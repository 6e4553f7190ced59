"""Compiler facts live in `backends/<compiler>/`: the folders above and beside them name no compiler in
their code (string literals and identifiers; comments and docstrings may mention compilers)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import dlcfuzz

PACKAGE = Path(dlcfuzz.__file__).resolve().parent
# the folders whose code must name no compiler (a compiler's kernel limits are its backend's facts)
COMPILER_FREE = ("engine", "oracle", "strategies", "synth", "gen", "ops", "programs")
# a compiler's name as a word part: `tvm`, `relax.add`, `xla_flags`, "ONNXRuntime", `ort-all`, `ov-cpu`;
# not ONNX vocabulary such as `pytorch_half_pixel` (a letter before "torch")
COMPILER_NAME = re.compile(r"(?<![a-z])(onnxruntime|tvm|relax|inductor|torch|xla|jax|openvino)(?![a-z])"
                           r"|(?<![\w-])(ort|ov)-[a-z]", re.I)
# files that are one compiler's by design, with the reason; everything else in COMPILER_FREE is checked
ALLOWED = {
    "strategies/tzer.py": "Tzer is TVM's fuzzer: it mutates TIR and TVM pass sequences and embeds a TVM script",
    "synth/extract.py": "mines patterns from ONNXRuntime's and TVM's own test corpora (their file layouts)",
    "synth/library.py": "the built-in patterns' data: the optimizations each targets, by compiler",
    "synth/library_tvm.py": "the patterns written for TVM's Relax passes: data of one compiler, as library.py's",
}


def _docstring_starts(source: str) -> set[tuple[int, int]]:
    """(line, column) of every docstring (a string that is a statement of its own)."""
    return {(n.lineno, n.col_offset) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}


def compiler_names(source: str) -> list[tuple[int, str]]:
    """(line, token) of string literals and identifiers of `source` that name a compiler."""
    docstrings = _docstring_starts(source)
    hits = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and tok.start in docstrings:
            continue
        if tok.type in (tokenize.STRING, tokenize.NAME) and COMPILER_NAME.search(tok.string):
            hits.append((tok.start[0], tok.string))
    return hits


def test_compiler_free_folders_name_no_compiler() -> None:
    found = []
    for folder in COMPILER_FREE:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            rel = path.relative_to(PACKAGE).as_posix()
            if rel in ALLOWED:
                continue
            found += [f"{rel}:{line}: {text[:80]}" for line, text in compiler_names(path.read_text())]
    assert not found, "compiler names outside backends/ (make them a backend fact):\n" + "\n".join(found)


def test_the_scan_sees_literals_and_identifiers_not_comments_or_docstrings() -> None:
    code = '"""A docstring about tvm and onnxruntime."""\n# a comment on torch\nmode = "pytorch_half_pixel"\n'
    assert compiler_names(code) == []
    assert [t for _, t in compiler_names('name = "tvm"\n')] == ['"tvm"']
    assert [t for _, t in compiler_names('x = f"error|{c}|ort-all"\n')] == ['f"error|{c}|ort-all"']
    assert [t for _, t in compiler_names("import jax\n")] == ["jax"]
    assert [t for _, t in compiler_names('k = "relax.add"\nv = "ov-cpu"\n')] == ['"relax.add"', '"ov-cpu"']


def test_allow_list_names_existing_files() -> None:
    assert all((PACKAGE / rel).is_file() for rel in ALLOWED)

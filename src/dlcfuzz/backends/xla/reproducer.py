"""Standalone reproducers for XLA findings: the program as readable JAX code (the very source the
campaign compiled), its inputs, the exact `compiler_options` of each configuration passed to
`jax.jit(model).lower(*args).compile(compiler_options=...)`, and the comparison (dlcfuzz's tolerances)
printing expected vs actual. Imports only jax and numpy; exits 1 with "BUG REPRODUCED" (a crash: the
script runs itself as a child process and reports the signal that killed it).

Small tensors are written inline as Python lists; larger ones as their exact bytes (base64 of the
zlib-compressed buffer): a finding can hinge on the exact values, so they are not regenerated.
"""

from __future__ import annotations

import pprint

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.backends.script import COMPARE, MAIN, UNPACK, array_source, error_type_line
from dlcfuzz.ir.graph import Graph

_RUN = '''

def run(name):
    opts = CONFIGS[name]
    args = [INPUTS[n].copy() for n in INPUT_ORDER]
    if opts["mode"] == "eager":  # op by op, no whole-program compile
        with jax.disable_jit():
            outs = model(*args)
    else:
        compiled = jax.jit(model).lower(*args).compile(compiler_options=opts["compiler_options"])
        outs = compiled(*args)
    return [np.asarray(o) for o in outs]
'''

# A crash kills the process that compiles: the script then runs itself as a child and reports its death.
_CRASH_GUARD = '''

if __name__ == "__main__" and CATEGORY == "crash" and "--child" not in sys.argv:
    import subprocess

    child = subprocess.run([sys.executable, __file__, "--child"])
    if child.returncode < 0:
        print(f"the compile or run was killed by signal {-child.returncode}")
        print("BUG REPRODUCED:", CATEGORY)
        sys.exit(1)
    sys.exit(child.returncode)
'''

def jax_script(g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
               configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    from dlcfuzz.lower.jax import to_jax_program

    prog = to_jax_program(g)
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    consts = "\n".join(f"{k} = jnp.asarray({array_source(a)})" for k, a in prog.consts.items())
    ins = ",\n".join(f"    {n!r}: {array_source(np.asarray(inputs[n]))}" for n in prog.input_names)
    exp = "None" if expected is None else "[\n" + ",\n".join(f"    {array_source(np.asarray(e))}" for e in expected) + ",\n]"
    opts = pprint.pformat({c.name: {"mode": c.options.get("mode", "jit"),
                                    "compiler_options": dict(c.options.get("compiler_options") or {})}
                           for c in configs}, sort_dicts=False)
    return f'''#!/usr/bin/env python3
"""{title}

Found by dlcfuzz against {version}.
Exit 1 and "BUG REPRODUCED" when the bug shows.
"""
{det}
import base64
import sys
import zlib

import numpy as np
import jax

jax.config.update("jax_enable_x64", True)  # float64/int64 as themselves, as dlcfuzz ran it
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402,F401
{UNPACK}

{consts}


{prog.source}

INPUT_ORDER = {prog.input_names!r}
INPUTS = {{
{ins}
}}
EXPECTED = {exp}  # dlcfuzz's NumPy reference (None: compare the configurations with each other)
CATEGORY = {category!r}
CONFIGS = {opts}
{error_type_line(category, detail)}{_RUN}{_CRASH_GUARD}{COMPARE}{MAIN}'''

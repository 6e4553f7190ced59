"""Standalone reproducers in PyTorch's bug-template form: the model as plain torch code (the very
source the campaign compiled), its inputs, `torch.compile` with the exact options, the comparison
printing expected vs actual. Only torch and numpy are imported; exit 1 with "BUG REPRODUCED".

Small tensors are written inline as Python lists; larger ones as their exact bytes (base64 of the
zlib-compressed buffer, decoded with the standard library and numpy): a finding can hinge on the
exact values, so they are not regenerated from a seed.
"""

from __future__ import annotations

import pprint
from typing import Any

import numpy as np

from dlcfuzz.backends.base import Config
from dlcfuzz.backends.script import COMPARE, MAIN, UNPACK, array_source, error_type_line
from dlcfuzz.ir.graph import Graph


def compile_options(options: dict[str, Any]) -> dict[str, Any]:
    """A configuration's options as the reproducer's run() reads them: backend, mode, dynamic and
    the exact torch._inductor.config patch (fallback_random included, as dlcfuzz compiled it)."""
    from dlcfuzz.backends.inductor.compiling import inductor_patch
    from dlcfuzz.backends.inductor.knobs import split_knobs

    if options.get("backend") == "openvino":  # OpenVINO's PyTorch front door (backends/openvino)
        return {"backend": "openvino", "mode": "default", "dynamic": False, "inductor_config": {},
                "options": options["options"]}
    knobs = dict(options.get("knobs") or {})
    mode, dynamic, _ = split_knobs(knobs)
    patch = inductor_patch(knobs, options.get("fault"))
    return {"backend": options.get("backend", "inductor"), "mode": mode, "dynamic": dynamic, "inductor_config": patch}


_RUN = '''

def run(name):
    opts = CONFIGS[name]
    args = [torch.from_numpy(INPUTS[n].copy()) for n in INPUT_ORDER]
    fn = model
    if opts["backend"] != "eager":
        torch.compiler.reset()
        kwargs = {"mode": opts["mode"]} if opts["mode"] != "default" else {}
        if "options" in opts:  # the backend's own options (OpenVINO's device and properties)
            kwargs["options"] = opts["options"]
        fn = torch.compile(model, backend=opts["backend"], fullgraph=True, dynamic=opts["dynamic"], **kwargs)
    # eager, a torch.cond compiles torch's one wrapper: its shapes kept concrete, as dlcfuzz ran it (pytorch#188151)
    dynamo = {"automatic_dynamic_shapes": False} if opts["backend"] == "eager" else {}
    with torch._inductor.config.patch(opts["inductor_config"]), torch._dynamo.config.patch(dynamo), torch.no_grad():
        return [t.detach().contiguous().numpy() for t in fn(*args)]
'''


def inductor_script(g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                    configs: list[Config], category: str, title: str, detail: str, version: str) -> str:
    from dlcfuzz.lower.torch import to_torch_program

    prog = to_torch_program(g)
    det = "\n".join("# " + ln for ln in detail.strip().splitlines()[:12])
    consts = "\n".join(f"{k} = torch.from_numpy({array_source(a)})" for k, a in prog.consts.items())
    ins = ",\n".join(f"    {n!r}: {array_source(np.asarray(inputs[n]))}" for n in prog.input_names)
    exp = "None" if expected is None else "[\n" + ",\n".join(f"    {array_source(np.asarray(e))}" for e in expected) + ",\n]"
    opts = pprint.pformat({c.name: compile_options(c.options) for c in configs}, sort_dicts=False)
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
import torch
import torch.nn.functional as F

{"import openvino.torch  # registers the openvino torch.compile backend" + chr(10) if any(
        c.options.get("backend") == "openvino" for c in configs) else ""}
torch.set_num_threads(1)  # as dlcfuzz ran it
{UNPACK}

{consts + chr(10) * 3 if consts else ""}{prog.source}

INPUT_ORDER = {prog.input_names!r}
INPUTS = {{
{ins}
}}
EXPECTED = {exp}  # dlcfuzz's NumPy reference (None: compare the configurations with each other)
CATEGORY = {category!r}
CONFIGS = {opts}
{error_type_line(category, detail)}{_RUN}{COMPARE}{MAIN}'''

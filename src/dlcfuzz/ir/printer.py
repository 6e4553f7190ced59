"""A readable text form of a Graph."""

from __future__ import annotations

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.ir.types import TensorType

# a longer attribute list (e.g. MaxUnpool's 1,944 indices) is elided like a constant: the text is
# for reading; the finding's reduced.json keeps every value
ATTR_LIST_SHOWN = 16


def _fmt_attr(v: object) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        if len(v) > ATTR_LIST_SHOWN and all(isinstance(x, (int, float)) for x in v):
            head = ", ".join(_fmt_attr(x) for x in v[:ATTR_LIST_SHOWN // 2])
            return f"[{head}, ... <{len(v)} values, min {min(v)}, max {max(v)}>]"
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    return repr(v) if isinstance(v, str) else str(v)


def _fmt_const(a: np.ndarray) -> str:
    if a.size <= 6:
        return np.array2string(a.reshape(-1), separator=", ")
    return f"<{a.size} values, min {a.min()}, max {a.max()}>"


def to_text(g: Graph) -> str:
    lines: list[str] = []
    for fname, f in g.functions.items():
        lines.extend(_function_text(f, fname))
        lines.append("")
    lines.extend(_function_text(g, g.name))
    return "\n".join(lines)


def _function_text(g: Graph, name: str, indent: str = "", head: str = "def @") -> list[str]:
    params = ", ".join(f"%{v.name}: {v.type}" for v in g.inputs)
    out = [f"{indent}{head}{name}({params}) {{"]
    for k, a in g.constants.items():
        out.append(f"{indent}  %{k}: {TensorType.of(a)} = const {_fmt_const(a)}")
    for n in g.nodes:
        lhs = ", ".join(f"%{v.name}: {v.type}" for v in n.outputs)
        bodies = n.bodies()
        attrs = {k: v for k, v in n.attrs.items() if k != "callee" and k not in bodies}
        op = f"@{n.attrs['callee']}" if n.op == "call" else n.op
        args = ", ".join(f"%{i}" for i in n.inputs)
        suffix = (" {" + ", ".join(f"{k}={_fmt_attr(v)}" for k, v in sorted(attrs.items())) + "}") if attrs else ""
        out.append(f"{indent}  {lhs} = {op}({args}){suffix}{':' if bodies else ''}")
        for attr, body in bodies.items():  # a region's bodies, indented under it (parameters bind its inputs)
            out.extend(_function_text(body, attr, indent + "    ", head=""))
    out.append(f"{indent}  return {', '.join('%' + o for o in g.outputs)}")
    out.append(f"{indent}}}")
    return out

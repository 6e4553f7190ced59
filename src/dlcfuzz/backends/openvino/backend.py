"""OpenVINO: two ONNX front doors (`Core.read_model`, `ov.convert_model`) and, when torch is installed,
its PyTorch front door (`torch.compile(backend="openvino")`); the CPU plugin under its precision,
snippets, performance and execution-mode properties, OpenVINO's own op-level reference
(`Model.evaluate`, no plugin) and ONNXRuntime on the same ONNX model as a cross-compiler baseline."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import openvino as ov

from dlcfuzz.backends.base import BackendBase, Config, Knob
from dlcfuzz.backends.onnxruntime import ORT_FRAMES
from dlcfuzz.backends.openvino.known import (
    EXPECTED,
    F64_IN_F32,
    FLOATS_IN_F32,
    INTEGERS_IN_I32,
    KNOWN_GAPS,
    RFFT_PADDED,
    WIDER_THAN_I32,
    rfft_pads,
)
from dlcfuzz.backends.opinions import DEFAULT_EVALUATORS, TORCH_EAGER
from dlcfuzz.ir.graph import Graph
from dlcfuzz.lower.onnx import to_onnx
from dlcfuzz.oracle.opinions import Evaluator

# One thread and one stream per worker: --jobs decides parallelism. f32 precision: on CPUs with
# bf16 support the plugin's default is bf16 (~4e-3 relative error), which no f32 tolerance admits.
FIXED = {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "f32"}
# The properties sampled per test (the first value of each is the campaign's default).
SAMPLED: dict[str, tuple[str, ...]] = {
    "SNIPPETS_MODE": ("ENABLE", "DISABLE"),  # the snippets code generator fuses eltwise subgraphs
    "PERFORMANCE_HINT": ("LATENCY", "THROUGHPUT"),
    "EXECUTION_MODE_HINT": ("PERFORMANCE", "ACCURACY"),
}
DEFAULT_PROPERTIES = {**FIXED, **{k: v[0] for k, v in SAMPLED.items()}}
P_SAMPLED = 0.5  # share of hirgen tests whose CPU configuration gets sampled properties
P_CONVERT = 0.25  # ... that add the ov.convert_model front door (about 10x slower than read_model)
P_ORT = 0.25  # ... that add ONNXRuntime on the same ONNX model
# ... that add OpenVINO's op-level reference (Model.evaluate): it lacks many (op, element type) pairs
# (Convolution, pooling, normalizations, most i8/i16/f64 kernels), so its "unsupported" would make
# most tests unknown if it ran on every test
P_REFERENCE = 0.25
# ... that add torch.compile(backend="openvino"), the graph written as torch code (lower/torch) and
# converted by OpenVINO's PyTorch frontend (measured: 0.3-0.9 s per new graph, 7 s to import once)
P_TORCH = 0.15
# ... whose torch source has at most this many lines. Dynamo traces the program line by line, and its time grows
# faster than the source: a 1-layer GRU unrolled over 16 steps (364 lines) compiled in 8.6 s, 32 steps (716 lines)
# in 24 s, past the 20 s deadline, 128 steps (2,828 lines) in 110 s (measured at load 2). A campaign's GRU of
# 2,047 steps (~100k lines) hung in Dynamo's tracer: a hang of ours, not OpenVINO's. Larger graphs keep the
# ONNX front doors, whose importers take a recurrence as one operator.
MAX_TORCH_SOURCE_LINES = 400


def torch_options(properties: dict[str, Any]) -> dict[str, Any]:
    """torch.compile's `options` for OpenVINO's backend: the CPU plugin with these properties."""
    return {"device": "CPU", "config": dict(properties), "model_caching": False}


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None and importlib.util.find_spec("openvino.torch") is not None


class OvTorch:
    """A torch program compiled by torch.compile(backend="openvino"): compiled on its first call, in
    build, so a conversion failure is a compile error."""

    def __init__(self, program: Any, g: Graph, properties: dict[str, Any]) -> None:
        import openvino.torch  # noqa: F401  (registers the "openvino" torch.compile backend)
        import torch

        from dlcfuzz.lower.torch import static_eager_conds

        torch.set_num_threads(1)  # --jobs decides parallelism, as for the CPU plugin's one thread
        torch.compiler.reset()  # no graphs, guards or recompile counts from earlier tests
        eager = program.function()
        example = [torch.ones(v.type.shape, dtype=getattr(torch, v.type.dtype)) for v in g.inputs]
        with torch.no_grad():
            try:
                with static_eager_conds():  # eager torch.cond compiles: its shapes kept concrete
                    eager(*example)
            except Exception as e:  # torch itself cannot run this program: not OpenVINO's to answer
                raise RuntimeError(f"[stage eager] unsupported by torch: {type(e).__name__}: {e}") from e
            self.fn = torch.compile(eager, backend="openvino", fullgraph=True, dynamic=False,
                                    options=torch_options(properties))
            self.fn(*example)
        self.input_names = [v.name for v in g.inputs]

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        import torch

        args = [torch.from_numpy(np.array(inputs[n], order="C")) for n in self.input_names]  # rank 0 stays 0
        with torch.no_grad():
            return [o.detach().contiguous().numpy().copy() for o in self.fn(*args)]

    def info(self) -> dict[str, Any]:
        return {"front": 'torch.compile(backend="openvino")'}


def _ort_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


@contextlib.contextmanager
def _no_telemetry() -> Iterator[None]:
    """ov.convert_model sends usage telemetry unless the user opted out, and waits for it (~15x
    slower: 0.14 s against 0.009 s per tiny model, measured): a fuzzer must not phone home
    thousands of times. openvino_telemetry declines consent when it sees CI=true."""
    old = os.environ.get("CI")
    os.environ["CI"] = "true"
    try:
        yield
    finally:
        if old is None:
            del os.environ["CI"]
        else:
            os.environ["CI"] = old


def read_front_door(core: Any, model_bytes: bytes, front: str) -> Any:
    """The ov.Model of an ONNX model through one of OpenVINO's two front doors."""
    if front == "convert":
        with _no_telemetry():
            return ov.convert_model(io.BytesIO(model_bytes))
    return core.read_model(model_bytes, b"")


def layers_of(compiled: Any) -> list[dict[str, str]]:
    """The executed graph of a compiled model: per node its layer type (e.g. Subgraph: a snippets
    kernel), primitive (e.g. jit_avx512_f32), runtime precision and the original layers it fused."""
    out = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        out.append({k: rt[k].astype(str) for k in ("layerType", "primitiveType", "runtimePrecision",
                                                      "originalLayersNames") if k in rt})
    return out


def _pick(inputs: dict[str, np.ndarray], names: set[str], renamed: dict[str, str]) -> np.ndarray:
    """The graph input a Parameter stands for, by its tensor names; `renamed` maps the names the
    known Dropout bug gives a Parameter back to the graph input's (known.DROPOUT_RENAMES_INPUT)."""
    found = {n: inputs[n] for n in names if n in inputs} or {renamed[n]: inputs[renamed[n]] for n in names
                                                             if renamed.get(n) in inputs}
    if len(found) != 1:
        raise RuntimeError(f"OpenVINO lost the name of a graph input: its Parameter's tensor is named {sorted(names)}")
    return next(iter(found.values()))


def dropout_renames(model_bytes: bytes) -> dict[str, str]:
    """Output name -> graph input name of every Dropout applied to a graph input directly or
    through a chain of Dropouts (each one passes the renamed input through)."""
    if b"Dropout" not in model_bytes:
        return {}
    import onnx

    g = onnx.load_from_string(model_bytes).graph
    source = {v.name: v.name for v in g.input}  # value -> the graph input it passes through
    renamed = {}
    for n in g.node:  # topological order
        if n.op_type == "Dropout" and n.input[0] in source:
            source[n.output[0]] = renamed[n.output[0]] = source[n.input[0]]
    return renamed


class OvCompiled:
    """A model compiled by the CPU plugin."""

    def __init__(self, compiled: Any, renamed: dict[str, str]) -> None:
        self.compiled = compiled
        self.request = compiled.create_infer_request()
        self.renamed = renamed

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        feed = {i: _pick(inputs, p.get_names(), self.renamed) for i, p in enumerate(self.compiled.inputs)}
        self.request.infer(feed, share_inputs=False)
        return [np.array(self.request.get_tensor(o).data, copy=True) for o in self.compiled.outputs]

    def info(self) -> dict[str, Any]:
        layers = layers_of(self.compiled)
        executed = [lay for lay in layers if lay.get("layerType") not in ("Input", "Output", "Const")]
        return {"layers": executed, "layer_types": sorted({lay.get("layerType", "?") for lay in executed})}


def evaluate_shape(shape: Any) -> list[int]:
    """The shape to allocate a Model.evaluate output tensor with: its static shape, or, for a data-dependent one
    (NonZero, a Loop's computed trip count), zero extents of its rank, which evaluate() resizes to what it
    computes (PartialShape.to_shape raises on a dynamic shape, which is no bug of OpenVINO's)."""
    if shape.is_static:
        return list(shape.to_shape())
    return [0] * (shape.rank.get_length() if shape.rank.is_static else 1)


class OvReference:
    """OpenVINO's own op-level reference: Model.evaluate runs each node's evaluate(), no plugin."""

    def __init__(self, model: Any, renamed: dict[str, str]) -> None:
        self.model = model
        self.renamed = renamed

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        params = self.model.get_parameters()
        # np.array, not np.ascontiguousarray: that one makes a 0-d input 1-d
        ins = [ov.Tensor(np.array(_pick(inputs, p.get_output_tensor(0).get_names(), self.renamed), order="C"))
               for p in params]
        outs = [ov.Tensor(r.get_element_type(), evaluate_shape(r.get_output_partial_shape(0)))
                for r in self.model.get_results()]
        if not self.model.evaluate(outs, ins):
            raise RuntimeError("Model.evaluate returned False: a node has no evaluate() for its element types")
        return [np.array(t.data, copy=True) for t in outs]


class OvOrt:
    """ONNXRuntime (all optimizations) on the same ONNX model: the cross-compiler baseline."""

    def __init__(self, model_bytes: bytes) -> None:
        from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

        self.inner = OnnxRuntimeBackend().compile_onnx(model_bytes, Config("ort", {"opt_level": "all"}))

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.inner.run(inputs)


class OpenVinoBackend(BackendBase):
    name = "openvino"
    lowers_through_onnx = True
    packages = ("openvino", "onnxruntime")  # where the compilers' own exceptions come from
    distributions = ("openvino",)
    # OpenVINO names the C++ source of each exception it rethrows ("Exception from
    # src/inference/src/model_reader.cpp:188:"; the innermost is last); its `ort` configuration is ONNXRuntime's
    frame_patterns = (r"^Exception from (?:\S*/)?([\w\-+]+\.[ch]pp):\d+:", r"in (ov::[\w:<>]+)", *ORT_FRAMES)

    def front_door(self, config: str) -> str:
        # the PyTorch front door takes the test as a torch program, the others as an ONNX model
        return "code" if self._torch_front(config) else "onnx"

    def issue_packages(self, config: str) -> tuple[str, ...]:
        # the torch front door's reproducer imports torch; the `ort` cross-check's runs onnxruntime
        c = self.configs().get(config)
        options = c.options if c is not None else {}
        extra = ("torch",) if options.get("front") == "torch" else ()
        extra += ("onnxruntime",) if options.get("device") == "onnxruntime" else ()
        return (*self.distributions, *extra)

    def independent_evaluators(self, config: str) -> Sequence[Evaluator]:
        # a torch-front configuration compiles the torch program: eager torch is its framework's own reading
        return (*DEFAULT_EVALUATORS, TORCH_EAGER) if self._torch_front(config) else DEFAULT_EVALUATORS

    def probe_identity(self, config: Config) -> tuple[str, str]:
        # the `ort` cross-check runs onnxruntime: what it supports, and its known bugs, are onnxruntime's
        if config.options.get("device") == "onnxruntime":
            from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

            ort = OnnxRuntimeBackend()
            return ort.name, ort.version()
        return super().probe_identity(config)

    def _torch_front(self, config: str) -> bool:
        c = self.configs().get(config)
        return c is not None and c.options.get("front") == "torch"
    deadline_s = 20.0  # compile + run of one test (measured: tens of ms; convert_model of a large graph ~1 s)
    input_sets = 8  # convert + compile_model cost most of a test (74% of a campaign's wall), a run little

    def __init__(self) -> None:
        self._core: Any = None

    @property
    def core(self) -> Any:
        """One ov.Core per process (it loads the plugins)."""
        if self._core is None:
            self._core = ov.Core()
        return self._core

    def version(self) -> str:
        return f"openvino {ov.get_version()}"

    def knobs(self) -> list[Knob]:
        return [
            Knob("front", ["read", "convert"], "ONNX front door: Core.read_model, or ov.convert_model (ovc)"),
            Knob("device", ["CPU", "reference", "onnxruntime"],
                 "the CPU plugin, Model.evaluate (no plugin), or ONNXRuntime on the same ONNX model"),
            *[Knob(k, list(v), f"CPU plugin property {k}") for k, v in SAMPLED.items()],
            Knob("INFERENCE_PRECISION_HINT", ["f32"], "f32 only: bf16 would need its own tolerance"),
        ]

    def configs(self) -> dict[str, Config]:
        cpu = {"front": "read", "device": "CPU", "properties": dict(DEFAULT_PROPERTIES)}
        out = {
            "ov-reference": Config("ov-reference", {"front": "read", "device": "reference"}),
            "ov-cpu": Config("ov-cpu", cpu),
            "ov-cpu-nosnippets": Config("ov-cpu-nosnippets", {**cpu, "properties": {
                **DEFAULT_PROPERTIES, "SNIPPETS_MODE": "DISABLE"}}),
            "ov-cpu-accuracy": Config("ov-cpu-accuracy", {**cpu, "properties": {
                **DEFAULT_PROPERTIES, "EXECUTION_MODE_HINT": "ACCURACY"}}),
            "ov-cpu-throughput": Config("ov-cpu-throughput", {**cpu, "properties": {
                **DEFAULT_PROPERTIES, "PERFORMANCE_HINT": "THROUGHPUT"}}),
            "ov-convert": Config("ov-convert", {**cpu, "front": "convert"}),
        }
        if _ort_installed():
            out["ort"] = Config("ort", {"front": "read", "device": "onnxruntime"})
        if torch_installed():
            out["ov-torch"] = Config("ov-torch", {**cpu, "front": "torch"})
        return out

    def default_pair(self) -> tuple[Config, Config]:
        """The CPU plugin with and without its snippets code generator (fused eltwise subgraphs),
        both judged against the NumPy reference. Model.evaluate (ov-reference) is not in the pair:
        it lacks an evaluate() for ~90% of 10-operator random graphs (measured: 269 of 300)."""
        c = self.configs()
        return c["ov-cpu-nosnippets"], c["ov-cpu"]

    def expected_error(self, message: str) -> str | None:
        if message.startswith("Fail:") or "[ONNXRuntimeError]" in message:  # the cross-compiler's own
            from dlcfuzz.backends.onnxruntime.backend import OnnxRuntimeBackend

            return OnnxRuntimeBackend().expected_error(message)
        return next((name for name, pat in EXPECTED if pat.search(message)), None)

    def known_gaps(self, op: str) -> dict[str, str]:
        return {**dict([F64_IN_F32]), **KNOWN_GAPS.get(op, {})}

    def documented_limitation(self, config: Config, values: Mapping[str, np.ndarray]) -> str | None:
        """The CPU plugin (every front door reaches it but Model.evaluate and ONNXRuntime) runs int64, uint32 and
        uint64 in int32, and float64 in float32."""
        if config.options.get("device", "CPU") != "CPU":
            return None
        info = np.iinfo(np.int32)
        beyond = sorted(name for name, x in values.items() if x.dtype.name in WIDER_THAN_I32 and x.size
                        and (int(x.min()) < info.min or int(x.max()) > info.max))
        if beyond:
            return INTEGERS_IN_I32.format(names=_some(beyond))
        with np.errstate(over="ignore"):  # beyond float32's range: inf, which differs
            not_f32 = sorted(name for name, x in values.items() if x.dtype == np.float64 and x.size
                             and not np.array_equal(x.astype(np.float32).astype(np.float64), x, equal_nan=True))
        return FLOATS_IN_F32.format(names=_some(not_f32)) if not_f32 else None

    def damages_process(self, g: Graph) -> str | None:
        """A one-sided forward DFT of a real signal zero-padded past the axis the CPU plugin transforms corrupts
        the heap (known.RFFT_PADDED): the worker is replaced after the test, whose own finding is that bug's."""
        for graph in _graphs_in(g):
            types = graph.types()
            for n in graph.nodes:
                if n.op != "dft" or not n.attrs.get("onesided") or n.attrs.get("inverse"):
                    continue
                x = types.get(n.inputs[0])  # None: a body reading a value of the scope around it
                if rfft_pads(None if x is None else x.shape, int(n.attrs["axis"]), n.attrs.get("dft_length")):
                    return f"{RFFT_PADDED}: a zero-padded one-sided DFT ({n.outputs[0].name}) corrupts the heap"
        return None

    # ---- per test -------------------------------------------------------
    def per_test_configs(self, rng: np.random.Generator, g: Graph, configs: list[Config]) -> list[Config]:
        """The campaign's configurations, plus per test: the CPU plugin under sampled properties,
        the ov.convert_model front door, ONNXRuntime on the same model and OpenVINO's op-level
        reference (each on a share of tests)."""
        out = list(configs)
        names = {c.name for c in out}
        every = self.configs()
        if rng.random() < P_SAMPLED:
            props = {**DEFAULT_PROPERTIES, **{k: v[int(rng.integers(len(v)))] for k, v in SAMPLED.items()}}
            if props != DEFAULT_PROPERTIES:
                out.append(Config("ov-cpu-sampled", {"front": "read", "device": "CPU", "properties": props}))
        if rng.random() < P_CONVERT and "ov-convert" not in names:
            out.append(every["ov-convert"])
        if rng.random() < P_ORT and "ort" in every and "ort" not in names and not _ort_form_gaps(g):
            out.append(every["ort"])
        if rng.random() < P_REFERENCE and "ov-reference" not in names:
            out.append(every["ov-reference"])
        if (rng.random() < P_TORCH and "ov-torch" in every and "ov-torch" not in names and _torch_lowers(g)
                and torch_source_lines(g) <= MAX_TORCH_SOURCE_LINES):
            out.append(every["ov-torch"])
        return out

    def disruptive_configs(self) -> list[str]:
        return ["ov-cpu", "ov-convert"]  # the two front doors

    def disruptive_rules(self) -> tuple[str, ...] | None:
        # Only shape rules bind: the importer maps ONNX nodes onto OpenVINO operations, whose documented
        # specifications are wider than ONNX's type constraints ("T: arbitrary supported type", Gather's
        # and Tile's "any integer type" indices/repeats) and whose Tile-1 prepends 1s to short `repeats`.
        # A 30-minute campaign (seed 15) had 6 such "accepted-invalid" clusters (bool LessOrEqual, uint8
        # Gather indices, Tile with rank-1 repeats), each what OpenVINO documents, none a bug.
        return ("shape",)

    def per_op_rules(self, config: Config) -> bool:
        # Both front doors are one importer that does not run ONNX's type/shape checks (OpenVINO's
        # own ops accept more element types than ONNX allows): an accepted invalid graph is that
        # importer's one root cause, whichever operator shows it (the finding's reproducer names it).
        return False

    def minimize_config(self, config: Config, shows: Callable[[Config], bool]) -> tuple[Config, list[str]]:
        """Reset each sampled CPU property to its default while the finding still shows; the
        properties left are the ones it needs."""
        props = dict(config.options.get("properties", {}))
        if config.options.get("device") != "CPU":
            return config, []
        for key in SAMPLED:
            if props.get(key) != DEFAULT_PROPERTIES[key]:
                cand = Config(config.name, {**config.options, "properties": {**props, key: DEFAULT_PROPERTIES[key]}})
                if shows(cand):
                    props = dict(cand.options["properties"])
        left = [f"{k}={props[k]}" for k in SAMPLED if props.get(k) != DEFAULT_PROPERTIES[k]]
        return Config(config.name, {**config.options, "properties": props}), left

    def reproducer(self, g: Graph, inputs: dict[str, np.ndarray], expected: list[np.ndarray] | None,
                   configs: list[Config], category: str, title: str, detail: str,
                   untyped_outputs: tuple[str, ...] = ()) -> str:
        if any(c.options.get("front") == "torch" for c in configs):
            # a torch script: eager torch (the program without a compiler) against the PyTorch front door
            from dlcfuzz.backends.inductor.reproducer import inductor_script

            script_configs = [Config("eager", {"backend": "eager"})] + [
                Config(c.name, {"backend": "openvino", "options": torch_options(
                    {**DEFAULT_PROPERTIES, **c.options.get("properties", {})})})
                for c in configs if c.options.get("front") == "torch"]
            return inductor_script(g, inputs, expected, script_configs, category, title, detail,
                                   f"{self.version()} (torch.compile(backend=\"openvino\"))")
        from dlcfuzz.backends.openvino.reproducer import openvino_script

        return openvino_script(g, inputs, expected, configs, category, title, detail, self.version(),
                               untyped_outputs)

    # ---- compile and run -------------------------------------------------
    def lower(self, g: Graph, config: Config) -> Any:
        if config.options.get("front") == "torch":
            from dlcfuzz.lower.torch import to_torch_program

            return to_torch_program(g)
        return to_onnx(g, untyped_outputs=config.options.get("untyped_outputs", ())).SerializeToString()

    def lower_key(self, config: Config) -> str:
        if config.options.get("front") == "torch":
            return "torch"
        return "onnx/untyped" if config.options.get("untyped_outputs") else "onnx"

    def build(self, lowered: Any, g: Graph, config: Config) -> Any:
        if config.options.get("front") == "torch":
            return OvTorch(lowered, g, {**DEFAULT_PROPERTIES, **config.options.get("properties", {})})
        return self.build_onnx(lowered, config)

    def build_onnx(self, model_bytes: bytes, config: Config) -> Any:
        o = config.options
        device = o.get("device", "CPU")
        if device == "onnxruntime":
            return OvOrt(model_bytes)
        model = read_front_door(self.core, model_bytes, o.get("front", "read"))
        renamed = dropout_renames(model_bytes)
        if device == "reference":
            return OvReference(model, renamed)
        return OvCompiled(self.compile_model(model, o), renamed)

    def compile_model(self, model: Any, options: dict[str, Any]) -> Any:
        """The CPU plugin's compile (a subclass may change the ov.Model first)."""
        return self.core.compile_model(model, "CPU", {**DEFAULT_PROPERTIES, **options.get("properties", {})})


def _ort_form_gaps(g: Graph) -> bool:
    """Whether `g` has an operator form ONNXRuntime lacks (its known form gaps): the cross-check would only
    be its expected rejection, or its known divergence."""
    from dlcfuzz.backends.onnxruntime.gaps import KNOWN_FORM_GAPS
    from dlcfuzz.gen.random import form_gaps_in

    return bool(form_gaps_in(g, lambda op: KNOWN_FORM_GAPS.get(op, ())))


def _graphs_in(g: Graph) -> Iterator[Graph]:
    """`g`, every region body in it and every sub-function (each with its own value types)."""
    yield g
    for n in g.nodes:
        for body in n.bodies().values():
            yield from _graphs_in(body)
    for f in g.functions.values():
        yield from _graphs_in(f)


def _some(names: list[str]) -> str:
    """The first three names, then an ellipsis."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def _torch_lowers(g: Graph) -> bool:
    """Every operator of `g` has a torch lowering (ORT's contrib operators, for one, have none)."""
    from dlcfuzz.lower.registry import load_target

    torch_rules = load_target("torch")
    return all(op in torch_rules.rules for op in g.ops_used() if op != "call")


def torch_source_lines(g: Graph) -> int:
    """The number of lines of `g`'s torch program (the PyTorch front door's input); 0 when the lowering fails,
    which the torch configuration's own lower stage then reports as before."""
    from dlcfuzz.lower.torch import to_torch_program

    try:
        return to_torch_program(g).source.count("\n")
    except Exception:  # any lowering failure (a gap or a bug of ours): the worker's lower stage classifies it
        return 0

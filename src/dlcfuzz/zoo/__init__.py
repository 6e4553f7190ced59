"""Model zoo: real architectures built in code as dlcfuzz Graphs with seeded random weights.

MT-DLComp mutates real model architectures; nothing here is downloaded. `build(name, seed)` is
reproducible bit for bit; `sample_inputs` gives a matching seeded input.

    >>> g = build("tiny_resnet", seed=0)
    >>> nodes, params = summary(g)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dlcfuzz.ir.graph import Graph
from dlcfuzz.zoo import models


@dataclass(frozen=True)
class ModelInfo:
    name: str
    description: str
    make: Callable[[int], Graph]
    tiny: bool = False


ZOO: dict[str, ModelInfo] = {
    m.name: m
    for m in [
        ModelInfo("resnet18", "ResNet-18 (CIFAR stem): 4 stages of 2 basic blocks, 64-512 channels, projection "
                  "shortcuts", models.resnet18),
        ModelInfo("vgg11", "VGG-11 with batch norm: 8 conv3x3+bn+relu layers, 5 max-pools, linear classifier",
                  models.vgg11),
        ModelInfo("mobilenet_v2", "MobileNetV2 (CIFAR strides): 17 inverted residual blocks with depthwise convs "
                  "and ReLU6, 1x1 conv to 1280", models.mobilenet_v2_cifar),
        ModelInfo("tiny_resnet", "2-stage ResNet with one basic block per stage (8, 16 channels), one projection "
                  "shortcut", models.tiny_resnet, tiny=True),
        ModelInfo("tiny_vgg", "VGG-style: 3 conv+bn+relu layers (8-16 channels), 3 max-pools, flatten, linear",
                  models.tiny_vgg, tiny=True),
        ModelInfo("tiny_mobilenet", "MobileNetV2-style: 4 inverted residual blocks (8-16 channels), depthwise "
                  "convs, ReLU6", models.tiny_mobilenet, tiny=True),
    ]
}

INPUT_SHAPE = models.INPUT_SHAPE
CLASSES = models.CLASSES


def names(tiny: bool | None = None) -> list[str]:
    """Model names; tiny=True/False selects the tiny or the full-size ones."""
    return [k for k, m in ZOO.items() if tiny is None or m.tiny == tiny]


def build(name: str, seed: int = 0) -> Graph:
    """The model `name` with weights drawn from `seed` (see ZOO for the names)."""
    try:
        info = ZOO[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(ZOO)}") from None
    return info.make(seed)


def summary(g: Graph) -> tuple[int, int]:
    """(number of nodes, number of parameters = elements of all constants)."""
    return len(g.nodes), int(sum(a.size for a in g.constants.values()))


def sample_inputs(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """A standard-normal input for every graph input (the zoo's models expect normalized images)."""
    rng = np.random.default_rng(seed)
    return {v.name: rng.standard_normal(v.type.shape).astype(v.type.np_dtype) for v in g.inputs}


__all__ = ["CLASSES", "INPUT_SHAPE", "ZOO", "ModelInfo", "build", "names", "sample_inputs", "summary"]

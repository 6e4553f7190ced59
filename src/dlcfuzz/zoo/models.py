"""Model architectures (CIFAR-style: input 1x3x32x32, 10 classes) as dlcfuzz Graphs.

The full-size models follow the well-known CIFAR adaptations of the ImageNet designs: a 3x3
stride-1 stem and no stem max-pool for ResNet-18 and MobileNetV2 (MobileNetV2's second stage keeps
stride 1 as well), VGG-11 with batch norm and a single linear classifier. The tiny variants keep the
same building blocks (and so the same operator mix and patterns: conv+bn+relu, projection shortcuts,
depthwise convolutions, inverted residuals) with a handful of channels and blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlcfuzz.ir.graph import Graph
from dlcfuzz.zoo.builder import Builder

INPUT_SHAPE = (1, 3, 32, 32)
CLASSES = 10
RESIDUAL_GAIN = 0.5  # scale of the last batch norm of a residual branch: sums grow slowly with depth


# ---- ResNet ------------------------------------------------------------------------------


def _basic_block(b: Builder, x: str, cout: int, stride: int, name: str) -> str:
    cin = b.type_of(x).shape[1]
    y = b.conv_bn(x, cout, 3, f"{name}_1", stride=stride)
    y = b.conv_bn(y, cout, 3, f"{name}_2", act=None, gain=RESIDUAL_GAIN)
    short = x if stride == 1 and cin == cout else b.conv_bn(x, cout, 1, f"{name}_down", stride=stride, act=None)
    return b.relu(b.add(y, short, f"{name}_add"), f"{name}_out")


def resnet(name: str, seed: int, stem: int, stages: Sequence[tuple[int, int, int]]) -> Graph:
    """stages: (channels, blocks, stride of the first block)."""
    b = Builder(name, seed)
    x = b.conv_bn(b.input("input", INPUT_SHAPE), stem, 3, "stem")
    for si, (c, n, s) in enumerate(stages):
        for bi in range(n):
            x = _basic_block(b, x, c, s if bi == 0 else 1, f"layer{si + 1}_{bi}")
    x = b.flatten(b.global_avg_pool(x, "pool"), "flat")
    return b.output(b.linear(x, CLASSES, "fc"))


# ---- VGG ---------------------------------------------------------------------------------


def vgg(name: str, seed: int, cfg: Sequence[int | str]) -> Graph:
    """cfg: output channels of 3x3 conv+bn+relu layers, "M" for a 2x2 max-pool."""
    b = Builder(name, seed)
    x = b.input("input", INPUT_SHAPE)
    conv = pool = 0
    for c in cfg:
        if c == "M":
            pool += 1
            x = b.max_pool(x, f"pool{pool}")
        else:
            conv += 1
            x = b.conv_bn(x, int(c), 3, f"conv{conv}")
    x = b.flatten(x, "flat")
    return b.output(b.linear(x, CLASSES, "fc"))


# ---- MobileNetV2 ---------------------------------------------------------------------------


def _inverted_residual(b: Builder, x: str, expand: int, cout: int, stride: int, name: str) -> str:
    cin = b.type_of(x).shape[1]
    hidden = cin * expand
    residual = stride == 1 and cin == cout
    y = b.conv_bn(x, hidden, 1, f"{name}_expand", act="relu6") if expand != 1 else x
    y = b.conv_bn(y, hidden, 3, f"{name}_dw", stride=stride, group=hidden, act="relu6")
    y = b.conv_bn(y, cout, 1, f"{name}_project", act=None, gain=RESIDUAL_GAIN if residual else 1.0)
    return b.add(y, x, f"{name}_add") if residual else y


def mobilenet_v2(name: str, seed: int, stem: int, cfg: Sequence[tuple[int, int, int, int]], last: int) -> Graph:
    """cfg: (expansion, channels, blocks, stride of the first block)."""
    b = Builder(name, seed)
    x = b.conv_bn(b.input("input", INPUT_SHAPE), stem, 3, "stem", act="relu6")
    for si, (t, c, n, s) in enumerate(cfg):
        for bi in range(n):
            x = _inverted_residual(b, x, t, c, s if bi == 0 else 1, f"block{si + 1}_{bi}")
    x = b.conv_bn(x, last, 1, "last", act="relu6")
    x = b.flatten(b.global_avg_pool(x, "pool"), "flat")
    return b.output(b.linear(x, CLASSES, "fc"))


# ---- the named models ------------------------------------------------------------------------

VGG11 = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]
MOBILENET_V2_CIFAR = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                      (6, 320, 1, 1)]


def resnet18(seed: int = 0) -> Graph:
    return resnet("resnet18", seed, 64, [(64, 2, 1), (128, 2, 2), (256, 2, 2), (512, 2, 2)])


def tiny_resnet(seed: int = 0) -> Graph:
    return resnet("tiny_resnet", seed, 8, [(8, 1, 1), (16, 1, 2)])


def vgg11(seed: int = 0) -> Graph:
    return vgg("vgg11", seed, VGG11)


def tiny_vgg(seed: int = 0) -> Graph:
    return vgg("tiny_vgg", seed, [8, "M", 16, "M", 16, "M"])


def mobilenet_v2_cifar(seed: int = 0) -> Graph:
    return mobilenet_v2("mobilenet_v2", seed, 32, MOBILENET_V2_CIFAR, 1280)


def tiny_mobilenet(seed: int = 0) -> Graph:
    return mobilenet_v2("tiny_mobilenet", seed, 8, [(1, 8, 1, 1), (2, 12, 2, 2), (2, 16, 1, 2)], 32)

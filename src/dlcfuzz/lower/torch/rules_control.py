"""Regions (ops/regions.py) in PyTorch: documented gaps of this slice (issue 40)."""

from __future__ import annotations

from dlcfuzz.lower.registry import target

TORCH = target("torch")

TORCH.gap("if", "torch.cond of our branches is not written yet (issue 40's next slice)")
TORCH.gap("loop", "a trip count that is a tensor needs torch.while_loop, which has no scan outputs, or a Python int "
                  "that Dynamo would specialize; not written yet (issue 40's next slice)")
TORCH.gap("scan", "torch's scan higher-order operator is private (torch._higher_order_ops.scan); not written yet "
                  "(issue 40's next slice)")

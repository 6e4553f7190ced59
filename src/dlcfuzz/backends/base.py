"""The backend protocol: compile a program under a configuration, run it on inputs.

A backend never decides what a bug is: it returns outputs or raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from dlcfuzz.ir.graph import Graph


@dataclass(frozen=True)
class Config:
    """One compile configuration: a name for reports and the backend's own options (JSON-able)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "options": self.options}

    @staticmethod
    def from_json(d: dict) -> Config:
        return Config(d["name"], dict(d.get("options", {})))


class Compiled(Protocol):
    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]: ...


@dataclass
class Knob:
    """A knob the compiler really has, so strategies can mutate and reducers minimize it."""

    name: str
    values: list[Any]
    doc: str


class Backend(Protocol):
    name: str
    packages: tuple[str, ...]  # Python packages of the compiler: an exception raised there is its rejection

    def version(self) -> str: ...

    def knobs(self) -> list[Knob]: ...

    def configs(self) -> dict[str, Config]:
        """Named configurations; `reference_pair()` names the two a campaign compares by default."""
        ...

    def default_pair(self) -> tuple[Config, Config]: ...

    def lower(self, g: Graph, config: Config) -> Any:
        """Graph -> what the compiler takes (ONNX bytes, an IRModule): dlcfuzz's work, timed apart."""
        ...

    def lower_key(self, config: Config) -> str:
        """Configs with equal keys share one lowering."""
        ...

    def build(self, lowered: Any, g: Graph, config: Config) -> Compiled:
        """The compiler's own work."""
        ...

    def compile(self, g: Graph, config: Config) -> Compiled: ...

    def expected_error(self, message: str) -> str | None:
        """If an exception message is documented rejection ("not supported", validation), its class name."""
        ...

"""No import cycle inside dlcfuzz: neither between two modules (a package's `__init__` with its own
submodules included) nor between two parts of one package (each subpackage taken whole, as the floors
of pyproject.toml's import-linter contract are). Module-level and call-time imports count alike: grimp
reports both, and a call-time import only hides a cycle from the interpreter, not from a reader."""

from __future__ import annotations

from collections import deque

import grimp
import pytest


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = deque(edges[start])
    while todo:
        m = todo.popleft()
        if m not in seen:
            seen.add(m)
            todo.extend(edges[m])
    return seen


def shortest_cycle(edges: dict[str, set[str]], start: str) -> list[str]:
    """The shortest path from `start` back to itself (breadth first), as the names along it."""
    parent: dict[str, str] = {}
    todo = deque([start])
    while todo:
        m = todo.popleft()
        for n in sorted(edges[m]):
            if n == start:
                path = [m]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if n not in parent:
                parent[n] = m
                todo.append(n)
    return []


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle per group of names that import each other (a strongly connected component
    of more than one member), each starting at the group's first name."""
    reach = {m: reachable(edges, m) for m in edges}
    cycles, done = [], set()
    for m in sorted(edges):
        if m in done or m not in reach[m]:
            continue
        done |= {n for n in reach[m] if m in reach[n]}
        cycles.append(shortest_cycle(edges, m))
    return cycles


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("dlcfuzz", cache_dir=None)  # always the sources as they are now


def module_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def part_edges(graph: grimp.ImportGraph, package: str) -> dict[str, set[str]]:
    """Which direct children of `package` import which (a child subpackage stands for all it holds)."""
    part_of = {}
    for child in graph.find_children(package):
        part_of[child] = child
        part_of.update(dict.fromkeys(graph.find_descendants(child), child))
    edges: dict[str, set[str]] = {child: set() for child in graph.find_children(package)}
    for m, part in part_of.items():
        for imported in graph.find_modules_directly_imported_by(m):
            if part_of.get(imported, part) != part:
                edges[part].add(part_of[imported])
    return edges


def test_no_two_modules_import_each_other(graph: grimp.ImportGraph) -> None:
    cycles = import_cycles(module_edges(graph))
    assert not cycles, "import cycles between modules:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_two_parts_of_a_package_import_each_other(graph: grimp.ImportGraph) -> None:
    packages = sorted(m for m in graph.modules if graph.find_children(m))
    assert "dlcfuzz" in packages and "dlcfuzz.backends.tvm" in packages
    cycles = [c for p in packages for c in import_cycles(part_edges(graph, p))]
    assert not cycles, "import cycles between parts of a package:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_import_cycles_finds_each_cycle_once_by_its_shortest_path() -> None:
    edges = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"b"}, "e": {"a"}, "f": set()}
    assert import_cycles(edges) == [["a", "b", "c", "a"]]
    assert import_cycles({"x": {"y"}, "y": set()}) == []

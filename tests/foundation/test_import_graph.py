"""The product's imports go one way: no circle between its modules, no private name taken from
another module, no test double imported by the product.

Read with `ast` from the source (nothing is imported, no database): grimp/import-linter would
do the graph too, but they add a dependency (and a Rust extension) for a few dozen lines, and
they cannot see the private names a module takes from another.

The rules:
- module level: the graph of `import` statements run when a module is imported (at its top, or
  under `if`/`try`; not under `if TYPE_CHECKING:`) has no circle. Importing `a.b.c` runs
  `a/__init__.py` and `a/b/__init__.py` too, so an import of a submodule counts as an edge to
  each package on its way.
- every level: the graph with imports inside functions added still has no circle, except
  between two modules one of which is a package's `__init__` or `models` (Django loads those
  first and they name what the app holds; they may reach into their own app lazily). A function-level import
  exists to put off a heavy import (pandas, a model server) or to break a circle; the second is
  what this forbids.
- a name that starts with one underscore is private to its module: no product module imports
  `_name` from another module (`from m import _x`), nor reads `m._x` of a module it imported.
- the product imports nothing from `tests` (the test doubles, tests/doubles/, live there).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO

PRODUCT = ("annotation", "judges", "rubrics", "config", "concord")


@dataclass
class Module:
    name: str
    path: Path
    is_package: bool
    top: set[str] = field(default_factory=set)        # imported when the module is imported
    lazy: set[str] = field(default_factory=set)       # imported inside a function
    private: list[str] = field(default_factory=list)  # "line: what", private names taken from other modules
    from_tests: list[str] = field(default_factory=list)  # "line: module" imported from the tests package


def product_modules(root: Path = REPO) -> dict[str, Module]:
    modules = {}
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if "migrations" in parts:  # Django's generated history: imported by the migration loader alone
                continue
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            modules[".".join(parts)] = Module(".".join(parts), path, is_package)
    return modules


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


class _Reader(ast.NodeVisitor):
    """Collects one module's imports (top level or lazy) and the private names it takes."""

    def __init__(self, module: Module, modules: dict[str, Module]):
        self.module, self.modules = module, modules
        self.depth = 0  # functions entered
        self.aliases: dict[str, str] = {}  # local name -> product module it is bound to

    def _target(self, name: str) -> str | None:
        """The product module `name` is, or the nearest package above it that is one."""
        while name and name not in self.modules:
            name = name.rpartition(".")[0]
        return name or None

    def _add(self, name: str, line: int) -> None:
        if name == "tests" or name.startswith("tests."):
            self.module.from_tests.append(f"{line}: {name}")
        target = self._target(name)
        if target is None or target == self.module.name:
            return
        edges = self.module.lazy if self.depth else self.module.top
        edges.add(target)
        parts = target.split(".")
        for i in range(1, len(parts)):  # importing a.b.c runs a and a.b first...
            package = ".".join(parts[:i])
            # ...unless this module is inside that package, which was then imported before it
            if package in self.modules and not (self.module.name + ".").startswith(package + "."):
                edges.add(package)

    def visit_FunctionDef(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node: ast.If):
        if _type_checking(node):  # read by type checkers only
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import):
        for alias in node.names:
            self._add(alias.name, node.lineno)
            if alias.asname and self._target(alias.name) == alias.name:
                self.aliases[alias.asname] = alias.name
            elif not alias.asname and alias.name.split(".")[0] in self.modules:
                self.aliases.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom):
        source = _absolute(self.module, node)
        for alias in node.names:
            full = f"{source}.{alias.name}"
            if full in self.modules:  # `from package import module`
                self._add(full, node.lineno)
                self.aliases[alias.asname or alias.name] = full
                if _private(alias.name) and source.split(".")[0] != self.module.name.split(".")[0]:
                    self.module.private.append(f"{node.lineno}: from {source} import {alias.name}")
                continue
            self._add(source, node.lineno)
            if _private(alias.name) and self._target(source) not in (None, self.module.name):
                self.module.private.append(f"{node.lineno}: from {source} import {alias.name}")

    def visit_Attribute(self, node: ast.Attribute):
        if _private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in self.aliases:
                owner = ".".join([self.aliases[value.id]] + chain[::-1][:-1])
                if owner in self.modules and owner != self.module.name:
                    self.module.private.append(f"{node.lineno}: {owner}.{node.attr}")
        self.generic_visit(node)


def read_imports(root: Path = REPO) -> dict[str, Module]:
    modules = product_modules(root)
    for module in modules.values():
        tree = ast.parse(module.path.read_text(), str(module.path))
        _Reader(module, modules).visit(tree)
    return modules


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _app_front(name: str, modules: dict[str, Module]) -> bool:
    """A package's __init__ or an app's models: Django loads them first; they may import lazily."""
    return modules[name].is_package or name.endswith(".models")


def lazy_circles(modules: dict[str, Module]) -> list[list[str]]:
    edges = {name: set(m.top) | {t for t in m.lazy if not _app_front(name, modules) and not _app_front(t, modules)}
             for name, m in modules.items()}
    return circles(edges)


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return read_imports()


def test_the_reader_sees_the_product(modules):
    # Guards the test itself: a reader that found nothing would pass every rule below.
    assert len(modules) > 200
    assert "judges.services.runs" in modules["judges.tasks"].top
    assert "judges.services.budget" in modules["judges.services.runs"].top


def test_no_circle_between_modules_at_import(modules):
    found = circles({name: m.top for name, m in modules.items()})
    assert not found, "modules that import each other when imported:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_circle_through_imports_inside_functions(modules):
    """An import inside a function hides a circle from Python, not from the reader: none is left (the last
    four, untangled on 2026-11-28: the crowd's overdue release moved into the assignment engine, releases
    queue their build by name, the demo hands its knobs to the participants' demo, and the direct method
    takes its JSON schema from judges.structured)."""
    found = lazy_circles(modules)
    assert not found, ("modules that import each other (counting imports inside functions):\n"
                       + "\n".join(" <-> ".join(c) for c in found))


def test_no_private_name_taken_from_another_module(modules):
    taken = [f"{m.path.relative_to(REPO)}:{line}" for m in modules.values() for line in m.private]
    assert not taken, "private names used outside their module:\n" + "\n".join(taken)


def test_the_product_imports_nothing_from_the_tests(modules):
    found = [f"{m.path.relative_to(REPO)}:{line}" for m in modules.values() for line in m.from_tests]
    assert not found, "product modules that import from tests/:\n" + "\n".join(found)


# The rules' own checks: each names a mistake and shows the reader catches it.

def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _fake_product(tmp_path: Path, files: dict[str, str]) -> dict[str, Module]:
    _write(tmp_path, {"judges/__init__.py": "", "judges/services/__init__.py": "", **files})
    return read_imports(tmp_path)


def test_a_circle_at_import_is_found(tmp_path):
    modules = _fake_product(tmp_path, {
        "judges/services/runs.py": "from judges.services.budget import cost\n",
        "judges/services/budget.py": "from judges.services import runs\n",
    })
    assert circles({n: m.top for n, m in modules.items()}) == [["judges.services.budget", "judges.services.runs"]]


def test_a_circle_through_a_function_is_found_and_type_checking_is_not_one(tmp_path):
    modules = _fake_product(tmp_path, {
        "judges/services/runs.py": "import judges.services.batches\n",
        "judges/services/batches.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                       "    from judges.services.runs import Run\n"
                                       "def f():\n    from judges.services.runs import enqueue\n"),
        "judges/models.py": "def f():\n    from judges.services import runs\n",
    })
    assert not circles({n: m.top for n, m in modules.items()})
    assert lazy_circles(modules) == [["judges.services.batches", "judges.services.runs"]]


def test_a_private_name_is_found_however_it_is_taken(tmp_path):
    modules = _fake_product(tmp_path, {
        "judges/services/runs.py": "def _enqueue():\n    pass\n_SIZE = 1\n",
        "judges/services/budget.py": ("from judges.services.runs import _enqueue\n"
                                      "from judges.services import runs as r\n"
                                      "import judges.services.runs\n"
                                      "def f():\n    return r._SIZE + judges.services.runs._SIZE\n"),
        "judges/services/own.py": "_X = 1\ndef f():\n    return _X, __name__\n",
        "judges/services/tested.py": "def f():\n    from tests.doubles.strict_provider_server import instance\n",
    })
    assert modules["judges.services.budget"].private == [
        "1: from judges.services.runs import _enqueue", "5: judges.services.runs._SIZE",
        "5: judges.services.runs._SIZE"]
    assert modules["judges.services.own"].private == []
    assert modules["judges.services.tested"].from_tests == ["2: tests.doubles.strict_provider_server"]

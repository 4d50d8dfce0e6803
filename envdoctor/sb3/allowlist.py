"""What a genuine SB3 `data` entry may contain, read from allowlist.json (its sources are listed there).

Three roles: `loader` globals rebuild objects while unpickling and may only be called there; `values` may
also appear as data that SB3 or pickled code calls with any arguments; `code` says what pickled bytecode
may reach. A module outside SB3's stack and outside the standard library is the user's own code: a plain
reference to it is tolerated (SB3 needs it importable, which the missing-module check reports), calling it
while loading is not.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import FrozenSet, Tuple

from envdoctor import package_data

CLASS_NAME = re.compile(r"^_?[A-Z][A-Za-z0-9_]*$")
STACK_PACKAGES = frozenset({"numpy", "torch", "gymnasium", "gym", "stable_baselines3", "sb3_contrib", "cloudpickle"})
PLUMBING = frozenset({"builtins", "__builtin__", "copyreg", "copy_reg", "types", "_operator", "operator"})


@dataclass(frozen=True)
class Allowlist:
    loader: FrozenSet[str]
    values: FrozenSet[str]
    value_prefixes: Tuple[str, ...]
    builtin_types: FrozenSet[str]
    subimports: FrozenSet[str]
    getitem_targets: Tuple[str, ...]
    code_builtins: FrozenSet[str]
    code_imports: FrozenSet[str]
    paths: FrozenSet[str]
    path_wildcards: Tuple[str, ...]
    path_classes: Tuple[str, ...]
    dunders: FrozenSet[str]
    reaching: FrozenSet[str]
    reaching_builtins: FrozenSet[str]
    storage_globals: FrozenSet[str]
    storage_suffix: str

    def is_loader(self, dotted: str) -> bool:
        return dotted in self.loader

    def is_value(self, module: str, name: str) -> bool:
        """Listed exactly, or a class (CamelCase, undotted) under one of the listed module prefixes."""
        module = "builtins" if module == "__builtin__" else module
        if f"{module}.{name}" in self.values:
            return True
        return bool(CLASS_NAME.match(name)) and under(module, self.value_prefixes)

    def path_allowed(self, dotted: str) -> bool:
        """Whether pickled code may use the attribute path `dotted` (e.g. "numpy.exp", "torch.nn.Linear")."""
        if dotted in self.paths:
            return True
        module, _, last = dotted.rpartition(".")
        if module in self.path_wildcards and not last.startswith("_"):
            return True
        return module in self.path_classes and bool(CLASS_NAME.match(last)) and not last.startswith("_")

    def is_storage_global(self, module: str, name: str) -> bool:
        """A global a tensor storage saved by torch may name: its rebuild functions and storage classes."""
        if f"{module}.{name}" in self.storage_globals:
            return True
        return module == "torch" and name.endswith(self.storage_suffix) and bool(CLASS_NAME.match(name))

    def attribute_allowed(self, name: str) -> bool:
        """An attribute pickled code may read from a value that is not a module: no dunder beyond a few, and
        none of the names that load files, run commands or reach an interpreter's internals."""
        if name.startswith("__") and name.endswith("__"):
            return name in self.dunders
        return name not in self.reaching


def under(module: str, prefixes: Tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def is_user_module(module: str) -> bool:
    """A module that is neither SB3's stack nor the standard library: the model's author's own code.

    Before Python 3.10 the standard library has no list, so every module outside the stack counts as one of
    its modules there: stricter, never laxer.
    """
    top = module.split(".", 1)[0]
    if top in STACK_PACKAGES or top in PLUMBING or not top:
        return False
    stdlib = getattr(sys, "stdlib_module_names", None)
    return stdlib is not None and top not in stdlib


@lru_cache(maxsize=1)
def load() -> Allowlist:
    data = json.loads(package_data.read_text(__package__, "allowlist.json"))
    code = data["code"]
    patterns = code["attribute_paths"]
    return Allowlist(
        loader=frozenset(data["loader"]),
        values=frozenset(data["values"]),
        value_prefixes=tuple(data["value_patterns"]),
        builtin_types=frozenset(data["builtin_types"]),
        subimports=frozenset(data["subimports"]),
        getitem_targets=tuple(data["getitem_targets"]),
        code_builtins=frozenset(code["builtins"]),
        code_imports=frozenset(code["imports"]),
        paths=frozenset(p for p in patterns if not p.endswith((".*", ".<Class>"))),
        path_wildcards=tuple(p[:-2] for p in patterns if p.endswith(".*")),
        path_classes=tuple(p[: -len(".<Class>")] for p in patterns if p.endswith(".<Class>")),
        dunders=frozenset(code["dunders"]),
        reaching=frozenset(code["reaching_attributes"]),
        reaching_builtins=frozenset(code["reaching_builtins"]),
        storage_globals=frozenset(data["torch_storage"]["globals"]),
        storage_suffix=data["torch_storage"]["storage_class_suffix"],
    )

"""Judging pickled bytecode (lambdas, closures, methods of classes from __main__) against the allowlist.

The names a code object uses are read from its instructions under the opcode numbering of every Python
that can run it: each minor version of its layout whose opcode set holds all of its opcodes (the loading
Python decides, not the producing one), or every minor of the layout when none does. A module the code reaches through its globals
may only be used as the head of an allowed attribute path (`np.exp`, `th.nn.Linear`); handing the module
itself around, importing anything but `math`, an unsafe builtin (eval, getattr, open …), a dunder attribute
beyond a few, or a name that loads files or runs commands makes the code dangerous. One pass per reading.
"""

from __future__ import annotations

import builtins
from typing import Iterable, List, Mapping, Sequence, Set, Tuple

from envdoctor.sb3 import bytecode
from envdoctor.sb3.allowlist import Allowlist

BUILTIN_NAMES = frozenset(dir(builtins))
GLOBAL_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS")
ATTRIBUTE_LOADS = ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR")
ATTRIBUTE_WRITES = ("STORE_ATTR", "DELETE_ATTR")
GLOBAL_WRITES = ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME")


def reasons(code: bytes, names: Sequence[object], n_args: int, modules: Mapping[str, Set[str]], allow: Allowlist) -> List[str]:
    """Why calling this code could run commands or code (empty: it cannot), under every numbering."""
    found: Set[str] = set()
    candidates = bytecode.candidate_minors(n_args, code)
    for minor in candidates or bytecode.numberings(n_args):
        ops = list(bytecode.instructions(code, minor))
        found.update(read(ops, names, modules, allow))
        if candidates:  # under a numbering that runs it, a name beyond co_names reads whatever memory follows
            found.update(f"reads co_names[{index}] of {len(names)}" for name, index in ops if name and index >= len(names))
    return sorted(found)


def text(names: Sequence[object], index: int) -> str:
    """co_names[index] when it is a string; "" for an index out of range (a reading that does not apply)."""
    value = names[index] if 0 <= index < len(names) else None
    return value if isinstance(value, str) else ""


def chain(ops: Sequence[Tuple[object, int]], start: int, names: Sequence[object]) -> List[str]:
    """The attribute names read one after another from the value loaded at `start` (`th.nn.Linear`)."""
    found = []
    for name, index in ops[start + 1:]:
        if name not in ("LOAD_ATTR", "LOAD_METHOD") or not text(names, index):
            break
        found.append(text(names, index))
    return found


def read(ops: Sequence[Tuple[object, int]], names: Sequence[object], modules: Mapping[str, Set[str]], allow: Allowlist) -> Iterable[str]:
    skip = 0
    for position, (name, index) in enumerate(ops):
        word = text(names, index) if name else ""
        if skip:
            skip -= 1
            continue
        if not word:
            continue
        if name in GLOBAL_LOADS and word in modules:
            path = chain(ops, position, names)
            skip = len(path)
            yield from module_use(word, modules[word], path, allow)
        elif name in GLOBAL_LOADS and word in BUILTIN_NAMES and word not in allow.code_builtins:
            yield f"calls the builtin {word}"
        elif name == "IMPORT_NAME" and word not in allow.code_imports:
            yield f"imports the module {word}"
        elif name == "IMPORT_FROM" and not any(allow.path_allowed(f"{m}.{word}") for m in allow.code_imports):
            yield f"imports {word} from a module"
        elif name in ATTRIBUTE_LOADS and not allow.attribute_allowed(word):
            yield f"reads the attribute {word}"
        elif name in ATTRIBUTE_WRITES and word.startswith("__"):
            yield f"changes the attribute {word}"
        elif name in GLOBAL_WRITES and word.startswith("__"):
            yield f"rebinds {word}"


def module_use(global_name: str, module_names: Set[str], path: List[str], allow: Allowlist) -> Iterable[str]:
    if not path:
        yield f"hands the module {' / '.join(sorted(module_names))} ({global_name}) to other code"
        return
    for module in sorted(module_names):
        dotted = ".".join([module, *path])
        if not allow.path_allowed(dotted):
            yield f"uses {dotted}"

"""Judging pickled bytecode (lambdas, closures, methods of classes from __main__) against the allowlist.

The names a code object uses are read from its instructions under the opcode numbering of every Python
that can run it: each minor version of its layout whose opcode set holds all of its opcodes (the loading
Python decides, not the producing one), or every minor of the layout when none does. A module the code reaches through its globals
may only be used as the head of an allowed attribute path (`np.exp`, `th.nn.Linear`).

Reading code never proves it safe: code is at best *contains code* (classify.py). What this module adds is
the knowledge of what is known to reach out, which makes code *dangerous*: handing a module itself around,
importing anything but `math` (or importing relatively, or at all while the pickled globals name a
package through `__package__`, a dotted `__name__`, `__path__` or `__spec__`, where a relative import resolves), a builtin that reaches code or files (eval, getattr, open …), a dunder
attribute beyond a few, or a name that loads files, runs commands or reaches native memory. What is merely
outside the list (`np.errstate`, a builtin nobody listed) is reported as unlisted, for forensics. One pass
per reading.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Iterable, List, Mapping, NamedTuple, Sequence, Set, Tuple

from envdoctor.knowledge import bytecode
from envdoctor.sb3.allowlist import Allowlist

BUILTIN_NAMES = frozenset(dir(builtins))
GLOBAL_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS")
ATTRIBUTE_LOADS = ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR")
ATTRIBUTE_WRITES = ("STORE_ATTR", "DELETE_ATTR")
GLOBAL_WRITES = ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_NAME", "DELETE_NAME")


DEREF_LOADS = ("LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF")


class Judged(NamedTuple):
    """What calling a code object could do: `reaching`, known to reach out (dangerous); `unlisted`, uses
    beyond the list that are not known to (forensics)."""

    reaching: List[str]
    unlisted: List[str]


@dataclass(frozen=True)
class Closure:
    """The code object's local slots, and which of its free variables hold a module (`import torch as th` in
    the enclosing function puts `th` in a closure cell)."""

    varnames: Tuple[object, ...] = ()
    cellvars: Tuple[object, ...] = ()
    freevars: Tuple[object, ...] = ()
    modules: Mapping[str, Set[str]] = field(default_factory=dict)


def reasons(code: bytes, names: Sequence[object], n_args: int, modules: Mapping[str, Set[str]], allow: Allowlist,
            closure: Closure = Closure(), package: bool = False) -> Judged:
    """What calling this code could reach, under every numbering that runs it; `package`: the pickled globals
    name a `__package__`, so any import may be a relative one that resolves there."""
    found: Set[Tuple[str, bool]] = set()
    candidates = bytecode.candidate_minors(n_args, code)
    for minor in candidates or bytecode.numberings(n_args):
        derefs = bytecode.cell_names(minor, closure.varnames, closure.cellvars, closure.freevars)
        ops = [(name, word(names, derefs, name, index), index) for name, index in bytecode.instructions(code, minor)]
        found.update(read(ops, modules, closure.modules, allow, package))
        if candidates:  # under a numbering that runs it, a name beyond co_names reads whatever memory follows
            found.update((f"reads co_names[{index}] of {len(names)}", True) for name, text, index in ops
                         if name and name not in DEREF_LOADS and index >= len(names))
    return Judged(sorted(r for r, reaching in found if reaching), sorted(r for r, reaching in found if not reaching))


def word(names: Sequence[object], derefs: Sequence[object], name: object, index: int) -> str:
    """The name an instruction uses: from co_names, or from the local slots for LOAD_DEREF and kin; "" for an
    index out of range (a reading that does not apply)."""
    table = derefs if name in DEREF_LOADS else names
    value = table[index] if 0 <= index < len(table) else None
    return value if isinstance(value, str) else ""


def chain(ops: Sequence[Tuple[object, str, int]], start: int) -> List[str]:
    """The attribute names read one after another from the value loaded at `start` (`th.nn.Linear`)."""
    found = []
    for name, text, _ in ops[start + 1:]:
        if name not in ("LOAD_ATTR", "LOAD_METHOD") or not text:
            break
        found.append(text)
    return found


def read(ops: Sequence[Tuple[object, str, int]], modules: Mapping[str, Set[str]], cell_modules: Mapping[str, Set[str]],
         allow: Allowlist, package: bool = False) -> Iterable[Tuple[str, bool]]:
    """(reason, whether it is known to reach out) for each use beyond the list."""
    skip = 0
    for position, (name, word_, _) in enumerate(ops):
        if skip:
            skip -= 1
            continue
        if name == "IMPORT_NAME" and (package or not word_):
            yield f"imports {word_ or 'from its package'} relatively, or while its pickled globals name a package (a relative import resolves there)", True
            continue
        if not word_:
            continue
        held = modules.get(word_) if name in GLOBAL_LOADS else cell_modules.get(word_) if name in DEREF_LOADS else None
        if held:
            path = chain(ops, position)
            skip = len(path)
            yield from module_use(word_, held, path, allow)
        elif name in GLOBAL_LOADS and word_ in BUILTIN_NAMES and word_ not in allow.code_builtins:
            yield f"calls the builtin {word_}", word_ in allow.reaching_builtins or word_.startswith("__")
        elif name == "IMPORT_NAME" and word_ not in allow.code_imports:
            yield f"imports the module {word_}", True
        elif name == "IMPORT_FROM" and not any(allow.path_allowed(f"{m}.{word_}") for m in allow.code_imports):
            yield f"imports {word_} from a module", True
        elif name in ATTRIBUTE_LOADS and not allow.attribute_allowed(word_):
            yield f"reads the attribute {word_}", True
        elif name in ATTRIBUTE_WRITES and word_.startswith("__"):
            yield f"changes the attribute {word_}", True
        elif name in GLOBAL_WRITES and word_.startswith("__"):
            yield f"rebinds {word_}", True


def module_use(global_name: str, module_names: Set[str], path: List[str], allow: Allowlist) -> Iterable[Tuple[str, bool]]:
    if not path:
        yield f"hands the module {' / '.join(sorted(module_names))} ({global_name}) to other code", True
        return
    for module in sorted(module_names):
        dotted = ".".join([module, *path])
        if not allow.path_allowed(dotted):
            yield f"uses {dotted}", any(part.startswith("_") or not allow.attribute_allowed(part) for part in path)

"""Which Python produced a cloudpickled code object, read from its layout and its bytecode.

cloudpickle rebuilds a function with `CodeType(*args)`; the number of args is fixed per Python
family (15 up to 3.7, 16 for 3.8–3.10, 18 from 3.11). Within a family the bytecode narrows it down:
every opcode must exist in that version, and from 3.11 the prologue must end in that version's RESUME
(151 on 3.11/3.12, 149 on 3.13). Facts: docs/knowledge/sb3-model-files.md §3b; opcode tables in
opcodes.json (dis.opmap of each CPython). The same reading tells which names the code loads as globals
and which modules it imports, so the classifier can tell `eval(text)` from `model.eval()`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from envdoctor import package_data

LAYOUTS = {15: "3.7 or older", 16: "3.8–3.10", 18: "3.11+"}
FAMILY_MINORS = {15: (), 16: ("3.8", "3.9", "3.10"), 18: ("3.11", "3.12", "3.13")}
# The name-using opcodes in each CPython's dis.opmap (3.6 and 3.7 number them as 3.8). From 3.11 the
# argument of LOAD_GLOBAL is index * 2 + a flag, from 3.12 so is LOAD_ATTR's, and LOAD_SUPER_ATTR's is index * 4.
_OLD = {"LOAD_GLOBAL": 116, "LOAD_NAME": 101, "IMPORT_NAME": 108, "IMPORT_FROM": 109, "EXTENDED_ARG": 144,
        "LOAD_ATTR": 106, "LOAD_METHOD": 160, "STORE_ATTR": 95, "DELETE_ATTR": 96, "STORE_GLOBAL": 97,
        "DELETE_GLOBAL": 98, "STORE_NAME": 90, "DELETE_NAME": 91, "LOAD_DEREF": 136, "LOAD_CLASSDEREF": 148}
_312 = {k: v for k, v in _OLD.items() if k not in ("LOAD_METHOD", "LOAD_CLASSDEREF")}
NAME_OPCODES = {
    "3.8": _OLD, "3.9": _OLD, "3.10": _OLD, "3.11": {**_OLD, "LOAD_DEREF": 137},
    "3.12": {**_312, "LOAD_DEREF": 137, "LOAD_SUPER_ATTR": 141, "LOAD_FROM_DICT_OR_GLOBALS": 175,
             "LOAD_FROM_DICT_OR_DEREF": 176},
    "3.13": {"LOAD_GLOBAL": 91, "LOAD_NAME": 92, "IMPORT_NAME": 75, "IMPORT_FROM": 74, "EXTENDED_ARG": 71,
             "LOAD_ATTR": 82, "STORE_ATTR": 108, "DELETE_ATTR": 63, "STORE_GLOBAL": 113, "DELETE_GLOBAL": 66,
             "STORE_NAME": 114, "DELETE_NAME": 67, "LOAD_SUPER_ATTR": 93, "LOAD_FROM_DICT_OR_GLOBALS": 90,
             "LOAD_DEREF": 84, "LOAD_FROM_DICT_OR_DEREF": 89},
}
SHIFTS = {"3.11": {"LOAD_GLOBAL": 1}, "3.12": {"LOAD_GLOBAL": 1, "LOAD_ATTR": 1, "LOAD_SUPER_ATTR": 2},
          "3.13": {"LOAD_GLOBAL": 1, "LOAD_ATTR": 1, "LOAD_SUPER_ATTR": 2}}


@lru_cache(maxsize=1)
def opcode_tables() -> dict:
    return json.loads(package_data.read_text(__package__, "opcodes.json"))["versions"]


def minor_of(version: Optional[str]) -> Optional[str]:
    """ "3.11.7" → "3.11"."""
    if not version:
        return None
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def family_of_minor(minor: Optional[str]) -> Optional[int]:
    """The CodeType arg count a Python minor version uses (the layout family)."""
    if not minor:
        return None
    major, _, rest = minor.partition(".")
    number = (int(major), int(rest)) if major.isdigit() and rest.isdigit() else None
    if number is None:
        return None
    if number <= (3, 7):
        return 15
    return 16 if number <= (3, 10) else 18


def opcodes(code: bytes) -> List[int]:
    """The opcode of every 2-byte code unit (wordcode since 3.6; 3.11+ inline caches are CACHE=0 units)."""
    return list(code[0::2])


def undefined_opcodes(code: bytes, defined: Iterable[int]) -> List[int]:
    """Opcodes in `code` that the interpreter with opcode set `defined` does not know: a certain crash."""
    known = set(defined)
    return sorted(set(opcodes(code)) - known)


def prologue_fits(ops: Sequence[int], table: dict) -> bool:
    """From 3.11 a function starts with a few setup opcodes and then that version's RESUME."""
    resume = table.get("resume")
    if resume is None:
        return True
    allowed = set(table.get("prologue", ()))
    for op in ops:
        if op == resume:
            return True
        if op not in allowed:
            return False
    return False


def caches_fit(code: bytes, table: dict) -> bool:
    """From 3.11 each specialisable instruction is followed by a fixed number of inline cache units, which
    the compiler writes as zeros: code compiled by this version has them exactly there (3.11 and 3.12
    differ here even where their opcode sets agree)."""
    caches = {int(op): count for op, count in table.get("caches", {}).items()}
    index, units = 0, len(code) // 2
    while index < units:
        count = caches.get(code[2 * index], 0)
        if any(code[2 * unit] or code[2 * unit + 1] for unit in range(index + 1, min(index + 1 + count, units))):
            return False
        index += 1 + count
    return True


def candidate_minors(n_args: int, code: bytes) -> List[str]:
    """The Python minor versions that could have produced `code` with `n_args` CodeType args."""
    ops = opcodes(code)
    used = set(ops)
    tables = opcode_tables()
    found = []
    for minor in FAMILY_MINORS.get(n_args, ()):
        table = tables.get(minor)
        if table and not used - defined_set(minor) and prologue_fits(ops, table) and caches_fit(code, table):
            found.append(minor)
    return found


@lru_cache(maxsize=None)
def defined_set(minor: str) -> frozenset:
    return frozenset(opcode_tables()[minor]["defined"])


def describe_candidates(n_args: int, candidates: Sequence[str]) -> str:
    if candidates:
        return " or ".join(candidates)
    layout = LAYOUTS.get(n_args)
    return f"{layout} (bytecode matches no known version)" if layout else f"unknown ({n_args} CodeType args)"


def layout_label(n_args: int) -> str:
    return LAYOUTS.get(n_args, f"unknown ({n_args} args)")


def cross_check(system_info_minor: Optional[str], n_args: int, candidates: Sequence[str]) -> Tuple[Optional[str], bool]:
    """The producing minor version, and whether system_info.txt agrees with the code object.

    system_info.txt is exact when it agrees with the code; when it does not (a payload spliced in from
    another Python), the code's own evidence wins.
    """
    if system_info_minor is not None:
        same_family = family_of_minor(system_info_minor) == n_args
        agrees = same_family and (not candidates or system_info_minor in candidates or system_info_minor not in FAMILY_MINORS.get(n_args, ()))
        if agrees:
            return system_info_minor, True
    if len(candidates) == 1:
        return candidates[0], system_info_minor is None
    return None, system_info_minor is None


def instructions(code: bytes, minor: str) -> Iterator[Tuple[Optional[str], int]]:
    """(name, name index) of every name-using instruction under `minor`'s numbering; (None, 0) for the rest.

    EXTENDED_ARG prefixes are folded into the next argument and 3.11+ inline caches (opcode 0) are skipped,
    so "the next instruction" means what the interpreter runs next.
    """
    numbering = NAME_OPCODES.get(minor, NAME_OPCODES["3.8"])
    by_opcode = {number: name for name, number in numbering.items()}
    shifts = SHIFTS.get(minor, {})
    skip_caches = family_of_minor(minor) == 18
    carry = 0
    for op, arg in zip(code[0::2], code[1::2]):
        if op == 0 and skip_caches:
            continue
        arg |= carry
        name = by_opcode.get(op)
        carry = arg << 8 if name == "EXTENDED_ARG" else 0
        if name == "EXTENDED_ARG":
            continue
        yield (name, arg >> shifts.get(name, 0)) if name else (None, 0)


def cell_names(minor: str, varnames: Sequence[object], cellvars: Sequence[object], freevars: Sequence[object]) -> List[object]:
    """The names LOAD_DEREF's argument indexes under `minor`: cells then free variables up to 3.10; from 3.11
    every local slot (locals, cells that are not also arguments, free variables)."""
    if family_of_minor(minor) != 18:
        return [*cellvars, *freevars]
    return [*varnames, *(c for c in cellvars if c not in varnames), *freevars]


def numberings(n_args: int) -> Sequence[str]:
    """Every opcode numbering a code object of this layout may be run under (the 3.7 layout numbers as 3.8)."""
    return FAMILY_MINORS.get(n_args) or ("3.8",)


def name_uses(code: bytes, names: Sequence[object], minors: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(global names, imported modules) among `names` (co_names), read from the bytecode.

    co_names mixes globals with attribute names: `eval(text)` and `model.eval()` both list "eval",
    `os.system` and `platform.system` both list "system". Only the operands of LOAD_GLOBAL/LOAD_NAME are
    globals (builtins included) and those of IMPORT_NAME imports. `minors` are the versions whose opcode
    numbering may apply (the producer, else the candidates); a name counts when any reading says so.
    """
    globals_, imports = set(), set()
    for minor in minors or ("3.8",):
        for name, index in instructions(code, minor):
            if name in ("LOAD_GLOBAL", "LOAD_NAME", "IMPORT_NAME") and index < len(names) and isinstance(names[index], str):
                (imports if name == "IMPORT_NAME" else globals_).add(names[index])
    return sorted(globals_), sorted(imports)

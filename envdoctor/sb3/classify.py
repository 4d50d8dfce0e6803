"""Classifying one `:serialized:` entry of an SB3 `data` member, statically.

Verdicts, worst first:
- dangerous: loading it names or calls something a genuine SB3 entry never does (allowlist.json), its code
  reaches something known to run commands, load code or touch files, or it is too large to judge;
- corrupt: SB3's own load would raise on it (bad base64, not a pickle, truncated);
- code (*contains code*): it is not data only: a function or code object pickled by value (a lambda, a
  closure, a class from __main__), a callable wrapper, or an object outside the data-only list. Code cannot
  be proven safe by reading it, so this is never *safe*; the bytecode reader only says who wrote it, what it
  calls and whether it crashes here;
- data (*safe*): data_only.py proves it builds nothing but data from its closed list of constructors.
"""

from __future__ import annotations

import base64
import binascii
import enum
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.sb3 import allowlist, data_only, pickle_judge, pickle_vm
from envdoctor.sb3 import cloudpickle_reader as reader


class Verdict(enum.Enum):
    DANGEROUS = "dangerous"
    CORRUPT = "corrupt"
    CODE = "code"
    DATA = "data"


# Modules cloudpickle and pickle themselves need; not worth reporting as requirements.
PLUMBING_MODULES = {"builtins", "copyreg", "__builtin__", "_codecs", "types"}


def numpy_major(modules: List[str]) -> Optional[int]:
    """NumPy 2 pickles name `numpy._core.*`, NumPy 1 `numpy.core.*` (docs/knowledge/sb3-model-files.md §3b)."""
    if any(m == "numpy._core" or m.startswith("numpy._core.") for m in modules):
        return 2
    if any(m == "numpy.core" or m.startswith("numpy.core.") for m in modules):
        return 1
    return None


def decode(text: Any) -> bytes:
    """The payload bytes as SB3 decodes them (`base64.b64decode`, non-validating)."""
    if not isinstance(text, str):
        raise ValueError(f"`:serialized:` holds a {type(text).__name__}, not base64 text")
    try:
        return base64.b64decode(text.encode())
    except (binascii.Error, UnicodeEncodeError) as error:
        raise ValueError(f"invalid base64: {error}") from None


def corrupt(key: str, type_text: Any, reason: str, size: int = 0) -> Dict[str, Any]:
    return {
        "key": key,
        "type": type_text,
        "verdict": Verdict.CORRUPT.value,
        "reasons": [reason],
        "bytes": size,
        "protocol": None,
        "globals": [],
        "modules": [],
        "numpy_major": None,
        "functions": [],
        "classes": [],
        "constants": [],
    }


def unique(globals_: List[pickle_vm.Global]) -> List[pickle_vm.Global]:
    seen, result = set(), []
    for g in globals_:
        if g not in seen:
            seen.add(g)
            result.append(g)
    return result


def unjudged(key: str, type_text: Any, reason: str, size: int) -> Dict[str, Any]:
    return {**corrupt(key, type_text, reason, size), "verdict": Verdict.DANGEROUS.value}


def classify(key: str, entry: Mapping[str, Any], system_info_minor: Optional[str], budget: Optional[pickle_vm.Budget] = None) -> Dict[str, Any]:
    """Facts and a verdict for the `data` entry `key` (a dict holding `:serialized:`)."""
    type_text = entry.get(":type:")
    try:
        payload = decode(entry.get(":serialized:"))
    except ValueError as error:
        return corrupt(key, type_text, str(error))
    return classify_payload(key, type_text, payload, system_info_minor, budget)


def classify_payload(key: str, type_text: Any, payload: bytes, system_info_minor: Optional[str], budget: Optional[pickle_vm.Budget] = None) -> Dict[str, Any]:
    """Facts and a verdict for the pickle bytes `payload`, named `key` (an SB3 entry, or a pickle file)."""
    try:
        trace = pickle_vm.run(payload, budget)
    except pickle_vm.CorruptPickle as error:
        return corrupt(key, type_text, f"not a loadable pickle: {error}", len(payload))
    except pickle_vm.TooLarge as error:
        return unjudged(key, type_text, f"could not be judged: {error}, more than genuine SB3 entries hold", len(payload))
    functions = reader.functions(trace, system_info_minor)
    globals_ = unique(trace.globals)
    modules = sorted(({g.module for g in globals_} | set(reader.subimports(trace))) - PLUMBING_MODULES)
    judgement = pickle_judge.reasons(trace, allowlist.load())
    not_data = data_only.reasons(trace)
    classes = reader.classes_by_value(trace)
    if judgement.dangerous:
        verdict, reasons = Verdict.DANGEROUS, judgement.dangerous
    elif not_data:
        verdict = Verdict.CODE
        pickled = [f"{f['qualname']} pickled by value ({f['layout']} layout, Python {f['producer_minor'] or f['python_guess']})" for f in functions]
        reasons = pickled + ([] if functions else not_data) + [f"uses {use}" for use in judgement.unlisted]
    else:
        verdict, reasons = Verdict.DATA, []
    return {
        "key": key,
        "type": type_text,
        "verdict": verdict.value,
        "reasons": reasons,
        "bytes": len(payload),
        "protocol": trace.protocol,
        "globals": [g.dotted for g in globals_],
        "modules": modules,
        "numpy_major": numpy_major(modules),
        "functions": functions,
        "classes": classes,
        "constants": reader.constants(trace, functions),
    }

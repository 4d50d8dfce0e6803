"""Classifying one `:serialized:` entry of an SB3 `data` member, statically.

Verdicts, worst first:
- dangerous: loading it imports something that runs commands or code (os.system, subprocess, eval,
  builtins.__import__ …), or it holds code that calls such names when SB3 calls it;
- corrupt: SB3's own load would raise on it (bad base64, not a pickle, truncated);
- code: it holds a code object pickled by value (a lambda, a closure, a class from __main__): bytecode
  that only the producing Python minor version can run;
- reference: it only names importable things (classes, FloatSchedule, numpy arrays, spaces).
"""

from __future__ import annotations

import base64
import binascii
import enum
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.sb3 import cloudpickle_reader as reader
from envdoctor.sb3 import pickle_vm


class Verdict(enum.Enum):
    DANGEROUS = "dangerous"
    CORRUPT = "corrupt"
    CODE = "code"
    REFERENCE = "reference"


# Modules whose every attribute can run commands, touch files or load more code.
DANGEROUS_MODULES = {
    "os", "posix", "nt", "subprocess", "pty", "shutil", "socket", "ctypes", "importlib", "runpy", "code",
    "codeop", "commands", "webbrowser", "pickle", "_pickle", "marshal", "sys", "multiprocessing", "signal",
    "_posixsubprocess", "asyncio", "http", "urllib", "ftplib", "smtplib", "telnetlib", "tempfile", "glob",
}
DANGEROUS_BUILTINS = {
    "eval", "exec", "compile", "__import__", "open", "getattr", "setattr", "delattr", "globals", "locals",
    "vars", "input", "breakpoint", "exit", "quit", "__builtins__",
}
# Names that, in by-value code, mean "this function runs commands when SB3 calls it".
DANGEROUS_CODE_NAMES = {
    "system", "popen", "Popen", "exec", "eval", "compile", "__import__", "execv", "execve", "execvp", "execl",
    "spawnv", "spawnl", "check_output", "check_call", "getoutput", "getstatusoutput", "startfile",
    "import_module", "rmtree", "remove", "unlink", "__builtins__",
}
# Modules cloudpickle and pickle themselves need; not worth reporting as requirements.
PLUMBING_MODULES = {"builtins", "copyreg", "__builtin__", "_codecs", "types"}


def is_dangerous(module: str, name: str) -> bool:
    top = module.split(".", 1)[0]
    if top in ("builtins", "__builtin__"):
        return name in DANGEROUS_BUILTINS
    return top in DANGEROUS_MODULES


def numpy_major(modules: List[str]) -> Optional[int]:
    """NumPy 2 pickles name `numpy._core.*`, NumPy 1 `numpy.core.*` (knowledge notes §3b)."""
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


def dangerous_reasons(trace: pickle_vm.Trace, functions: List[Mapping[str, Any]]) -> List[str]:
    reasons = [f"imports {g.dotted} when loaded" for g in unique(trace.globals) if is_dangerous(g.module, g.name)]
    reasons += [f"its code imports the module {m}" for m in reader.subimports(trace) if m.split(".", 1)[0] in DANGEROUS_MODULES - {"sys"}]
    for function in functions:
        called = sorted(set(function["names"]) & DANGEROUS_CODE_NAMES)
        if called:
            reasons.append(f"{function['qualname']} uses {', '.join(called)} when called")
    return reasons


def unique(globals_: List[pickle_vm.Global]) -> List[pickle_vm.Global]:
    seen, result = set(), []
    for g in globals_:
        if g not in seen:
            seen.add(g)
            result.append(g)
    return result


def classify(key: str, entry: Mapping[str, Any], system_info_minor: Optional[str]) -> Dict[str, Any]:
    """Facts and a verdict for the `data` entry `key` (a dict holding `:serialized:`)."""
    type_text = entry.get(":type:")
    try:
        payload = decode(entry.get(":serialized:"))
    except ValueError as error:
        return corrupt(key, type_text, str(error))
    try:
        trace = pickle_vm.run(payload)
    except pickle_vm.CorruptPickle as error:
        return corrupt(key, type_text, f"not a loadable pickle: {error}", len(payload))
    functions = reader.functions(trace, system_info_minor)
    globals_ = unique(trace.globals)
    modules = sorted(({g.module for g in globals_} | set(reader.subimports(trace))) - PLUMBING_MODULES)
    danger = dangerous_reasons(trace, functions)
    classes = reader.classes_by_value(trace)
    if danger:
        verdict, reasons = Verdict.DANGEROUS, danger
    elif functions:
        verdict = Verdict.CODE
        reasons = [f"{f['qualname']} pickled by value ({f['layout']} layout, Python {f['producer_minor'] or f['python_guess']})" for f in functions]
    else:
        verdict, reasons = Verdict.REFERENCE, []
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

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
# Callables that reach any attribute of what they are given, as getattr does (`methodcaller("system")(os)`).
DANGEROUS_GLOBALS = {"operator.attrgetter", "operator.methodcaller", "_operator.attrgetter", "_operator.methodcaller"}
# Modules pickled code may well use harmlessly (os.path, os.environ, sys.argv): only the names below make
# their use dangerous. Every other dangerous module is there to run commands or load code.
EVERYDAY_MODULES = {"os", "posix", "nt", "shutil", "sys", "tempfile", "glob", "signal"}
COMMAND_MODULES = DANGEROUS_MODULES - EVERYDAY_MODULES
# Functions of the everyday modules that run commands or destroy files, when code that reaches them names them.
COMMAND_NAMES = {
    "system", "popen", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe", "spawnl",
    "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp",
    "startfile", "fork", "forkpty", "kill", "killpg", "remove", "unlink", "rmdir", "removedirs", "rmtree",
}
# Builtins that, called by pickled code, run code or import modules.
CODE_BUILTINS = {"exec", "eval", "compile", "__import__", "__builtins__", "breakpoint"}
# Modules cloudpickle and pickle themselves need; not worth reporting as requirements.
PLUMBING_MODULES = {"builtins", "copyreg", "__builtin__", "_codecs", "types"}


def is_dangerous(module: str, name: str) -> bool:
    """Whether the pickle's global `module`.`name` reaches something that runs commands or code.

    From protocol 4 a name may be dotted and is looked up attribute by attribute, so `zipfile` with
    `os.system` is os.system: every step on the way counts, not only the module.
    """
    top = module.split(".", 1)[0]
    steps = name.split(".")
    if top in ("builtins", "__builtin__"):
        return steps[0] in DANGEROUS_BUILTINS or steps[-1] in DANGEROUS_BUILTINS
    if top in DANGEROUS_MODULES or f"{module}.{name}" in DANGEROUS_GLOBALS:
        return True
    return any(step.lstrip("_") in DANGEROUS_MODULES | {"builtins"} for step in steps[:-1]) or "__builtins__" in steps


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
    """Why loading this entry, or calling the code in it, runs commands or code (empty: it does not)."""
    globals_ = unique(trace.globals)
    reasons = [f"imports {g.dotted} when loaded" for g in globals_ if is_dangerous(g.module, g.name)]
    code_modules = set(reader.subimports(trace)) | {m for f in functions for m in f["imports"]}
    reasons += [f"its code imports the module {m}" for m in sorted(code_modules) if m.split(".", 1)[0] in COMMAND_MODULES]
    reached = {m.split(".", 1)[0] for m in code_modules | {g.module for g in globals_}}
    for function in functions:
        called = set(function["global_names"]) & CODE_BUILTINS
        if reached & EVERYDAY_MODULES or "__import__" in called:  # __import__ reaches any module
            called |= set(function["names"]) & COMMAND_NAMES
        if called:
            reasons.append(f"{function['qualname']} uses {', '.join(sorted(called))} when called")
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

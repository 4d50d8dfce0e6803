"""Reading a traced cloudpickle payload: code objects, functions, closure values, classes, globals.

cloudpickle rebuilds a function as `_make_function(CodeType(*args), globals, name, defaults, closure)`
and then `_function_setstate(f, (state, slotstate))`, where slotstate names `__qualname__`,
`__module__`, the referenced `__globals__` and the `__closure__` cells (`_make_cell(value)`). Classes
defined in `__main__` come as `_make_skeleton_class(...)`. Everything here reads the nodes of
`pickle_vm`; nothing is resolved or called.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.knowledge import bytecode
from envdoctor.knowledge.bytecode import FAMILY_MINORS
from envdoctor.sb3.pickle_vm import Call, Dict_, Global, OutOfBand, Persistent, Set_, Trace, callee

CODE_FIELDS = {
    15: ("argcount", "kwonlyargcount", "nlocals", "stacksize", "flags", "code", "consts", "names", "varnames",
         "filename", "name", "firstlineno", "lnotab", "freevars", "cellvars"),
    16: ("argcount", "posonlyargcount", "kwonlyargcount", "nlocals", "stacksize", "flags", "code", "consts", "names",
         "varnames", "filename", "name", "firstlineno", "lnotab", "freevars", "cellvars"),
    18: ("argcount", "posonlyargcount", "kwonlyargcount", "nlocals", "stacksize", "flags", "code", "consts", "names",
         "varnames", "filename", "name", "qualname", "firstlineno", "linetable", "exceptiontable", "freevars", "cellvars"),
}
MAX_ITEMS = 16
MAX_FUNCTIONS = 64
MAX_TEXT = 200
MAX_CODE_HEX = 512


def describe(value: Any, depth: int = 3) -> Any:
    """A short JSON-able picture of a traced value, for reports (bounded in depth and length)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "…"
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, Global):
        return f"<global {value.dotted}>"
    if isinstance(value, Call):
        module = subimported(value)
        if module:
            return f"<module {module}>"
        target = callee(value)
        return f"<call {target.dotted if target else '?'}(…)>"
    if isinstance(value, (Persistent, OutOfBand)):
        return f"<{type(value).__name__.lower()}>"
    if depth <= 0:
        return "…"
    if isinstance(value, (list, tuple)):
        return [describe(v, depth - 1) for v in value[:MAX_ITEMS]] + (["…"] if len(value) > MAX_ITEMS else [])
    if isinstance(value, Set_):
        return describe(value.items, depth)
    if isinstance(value, Dict_):
        return {str(describe(k, 0)): describe(v, depth - 1) for k, v in value.pairs[:MAX_ITEMS]}
    return f"<{type(value).__name__}>"


def subimported(node: Any) -> str:
    """The module name of cloudpickle's `subimport("torch")`, how by-value code reaches its modules."""
    target = callee(node)
    if target and target.name in ("subimport", "dynamic_subimport") and isinstance(node.args, tuple) and node.args and isinstance(node.args[0], str):
        return node.args[0]
    return ""


def subimports(trace: Trace) -> List[str]:
    return [name for name in (subimported(c) for c in trace.calls) if name]


def is_code_type(func: Any) -> bool:
    """`types.CodeType` directly, or cloudpickle's `_builtin_type('CodeType')`."""
    if isinstance(func, Global):
        return func.name == "CodeType"
    target = callee(func)
    return bool(target and target.name == "_builtin_type" and func.args == ("CodeType",))


def named_call(node: Any, *names: str) -> bool:
    target = callee(node)
    return bool(target and target.module.startswith("cloudpickle") and target.name in names)


def code_fields(call: Call) -> Optional[Dict[str, Any]]:
    args = call.args if isinstance(call.args, tuple) else ()
    names = CODE_FIELDS.get(len(args))
    return dict(zip(names, args)) if names else None


def strings(value: Any) -> List[str]:
    return [v for v in value[:MAX_ITEMS * 4] if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def float_constants(values: Any) -> List[float]:
    return [v for v in values[:MAX_ITEMS * 4] if isinstance(v, float)] if isinstance(values, (list, tuple)) else []


def code_facts(call: Call, system_info_minor: Optional[str]) -> Dict[str, Any]:
    """Everything a report needs about one code object, and which Python made it."""
    n_args = len(call.args) if isinstance(call.args, tuple) else 0
    fields = code_fields(call) or {}
    raw = fields.get("code")
    code = raw if isinstance(raw, bytes) else b""
    candidates = bytecode.candidate_minors(n_args, code)
    producer, consistent = bytecode.cross_check(system_info_minor, n_args, candidates)
    consts = fields.get("consts", ())
    raw_names = fields.get("names")
    numberings = [producer] if producer else candidates or FAMILY_MINORS.get(n_args, ())
    global_names, imports = bytecode.name_uses(code, raw_names if isinstance(raw_names, tuple) else (), numberings)
    return {
        "name": describe(fields.get("name")),
        "qualname": describe(fields.get("qualname", fields.get("name"))),
        "filename": describe(fields.get("filename")),
        "firstlineno": fields.get("firstlineno") if isinstance(fields.get("firstlineno"), int) else None,
        "n_args": n_args,
        "layout": bytecode.layout_label(n_args),
        "bytecode_candidates": candidates,
        "python_guess": bytecode.describe_candidates(n_args, candidates),
        "producer_minor": producer,
        "system_info_agrees": consistent,
        "code_hex": code[:MAX_CODE_HEX].hex(),
        "code_bytes": len(code),
        "consts": describe(list(consts) if isinstance(consts, tuple) else [], 2),
        "float_consts": float_constants(consts),
        "names": strings(raw_names),
        "global_names": global_names,
        "imports": imports,
        "varnames": strings(fields.get("varnames")),
        "freevars": strings(fields.get("freevars")),
    }


def function_states(trace: Trace) -> Dict[int, Dict_]:
    """{id(function): slotstate} from every `_function_setstate(f, (state, slotstate))` call, in one pass."""
    states: Dict[int, Dict_] = {}
    for call in trace.calls:
        if named_call(call, "_function_setstate") and isinstance(call.args, tuple) and len(call.args) == 2:
            func, pair = call.args
            if isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[1], Dict_):
                states[id(func)] = pair[1]
    return states


def cell_values(trace: Trace) -> List[Any]:
    """Closure values, from `_make_cell(value)` (cloudpickle ≥1.5) or `cell_set(cell, value)` (older)."""
    values = []
    for call in trace.calls:
        if named_call(call, "_make_cell", "cell_set") and isinstance(call.args, tuple) and call.args:
            values.append(call.args[-1])
    return values


def code_calls(trace: Trace) -> List[Call]:
    return [call for call in trace.calls if is_code_type(call.func)]


def functions(trace: Trace, system_info_minor: Optional[str]) -> List[Dict[str, Any]]:
    """One record per code object pickled by value (the first MAX_FUNCTIONS), joined with its function's state."""
    records = []
    makers = {id(c.args[0]): c for c in trace.calls if named_call(c, "_make_function", "_make_skel_func") and isinstance(c.args, tuple) and c.args}
    states = function_states(trace)
    for call in code_calls(trace)[:MAX_FUNCTIONS]:
        record = code_facts(call, system_info_minor)
        maker = makers.get(id(call))
        state = states.get(id(maker), Dict_()) if maker is not None else Dict_()
        if state.get("__qualname__") is not None:
            record["qualname"] = describe(state.get("__qualname__"))
        record["module"] = describe(state.get("__module__"))
        referenced = state.get("__globals__")
        record["globals"] = describe(referenced, 2) if isinstance(referenced, Dict_) else {}
        closure = state.get("__closure__")
        cells = closure[:MAX_ITEMS] if isinstance(closure, tuple) else ()
        record["closure"] = [describe(cell.args[-1]) for cell in cells if isinstance(cell, Call) and isinstance(cell.args, tuple) and cell.args]
        records.append(record)
    return records


def classes_by_value(trace: Trace) -> List[str]:
    """Names of classes cloudpickle rebuilt from scratch (defined in __main__ or a non-importable module)."""
    names = []
    for call in trace.calls:
        if named_call(call, "_make_skeleton_class", "_make_skeleton_enum") and isinstance(call.args, tuple) and len(call.args) > 1:
            names.append(str(describe(call.args[1])))
    return names


def constants(trace: Trace, records: List[Dict[str, Any]]) -> List[float]:
    """Float candidates for a schedule's value: closure cells first, then code constants, in order, each once."""
    found = [v for v in cell_values(trace) if isinstance(v, float)]
    for record in records:
        found.extend(record["float_consts"])
    unique: Dict[str, float] = {}
    for value in found:
        unique.setdefault(repr(value), value)
    return list(unique.values())[:MAX_ITEMS]

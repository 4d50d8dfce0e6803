"""Judging a traced pickle against the allowlist: every global it names, every call it makes while loading.

A global is judged by where it stands. As the callee of REDUCE/NEWOBJ/OBJ/INST it must be a loader or a
listed value (a class SB3's stack defines); anywhere else it must be a listed value, or a plain reference to
the user's own code in an entry that holds no code. Loader results that hand out powers are confined:
`subimport` modules may only be values of a globals dict or of a closure cell that judged code reads
(code reaches them through checked attribute paths), `_builtin_type` may not hand `CodeType`/`FunctionType`
to code, fillers fill only what the pickle made, and BUILD may only set the state of an object the pickle
itself created. The bytes a tensor's storage hands to torch.load are a second pickle, judged too (a zip
there is refused: torch reads it as a zip archive whose data.pkl `_load_from_bytes` loads with
weights_only=False). A callable wrapper (`functools.partial`) may only wrap a function the pickle made. Every
code object is judged by code_judge: what it is known to reach makes the entry dangerous, what is merely
unlisted is forensics. Linear in the size of the trace: each node is visited once.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, NamedTuple, Set, Tuple

from envdoctor.sb3 import code_judge, pickle_vm
from envdoctor.sb3 import cloudpickle_reader as reader
from envdoctor.sb3.allowlist import Allowlist, is_user_module
from envdoctor.sb3.pickle_vm import Call, Dict_, Global, Set_, Trace, callee

# Loader results that are modules, types, functions or classes: BUILD on them would rewrite shared state.
NOT_BUILDABLE = {"subimport", "dynamic_subimport", "_builtin_type", "_make_function", "_make_skel_func",
                 "_make_skeleton_class", "_make_skeleton_enum", "getitem"}
CODE_MAKERS = {"CodeType", "FunctionType", "LambdaType"}
# Loaders that fill in an object: only one the pickle made with the matching maker, never a class or function
# of a real module (that would rewrite it for the whole process).
FUNCTION_MAKERS = {"_make_function", "_make_skel_func", "FunctionType", "LambdaType"}
FILLERS = {
    "_function_setstate": FUNCTION_MAKERS,
    "_fill_function": FUNCTION_MAKERS,
    "_class_setstate": {"_make_skeleton_class", "_make_skeleton_enum"},
    "cell_set": {"_make_empty_cell"},
}
# torch's legacy save: magic number, protocol version, sys_info, the storage, its keys; raw bytes follow.
LEGACY_PICKLES = 5
DATA, GLOBALS, SUBMODULES, CELL = "data", "globals", "submodules", "cell"
# Callable wrappers cloudpickle writes by reference (functools.partial.__reduce__): the function they wrap is
# their first argument, and it must be one the pickle made (its code is judged) .
WRAPPERS = {"functools.partial"}
ZIP_MAGIC = b"PK\x03\x04"  # torch.serialization._is_zipfile: these first bytes make torch.load read a zip


class Judgement(NamedTuple):
    """`dangerous`: why loading it, or calling its code, may run something known to reach out; `unlisted`: what
    its code uses beyond the list without being known to (forensics, never a proof either way)."""

    dangerous: List[str]
    unlisted: List[str]


def loader_name(node: Any) -> str:
    target = callee(node)
    return target.name if target else ""


def maker_name(node: Any) -> str:
    """What made `node`: its loader's name, or the type `_builtin_type(name)` handed to the call (cloudpickle
    before 1.5 builds functions as `_builtin_type("LambdaType")(code, globals, …)`)."""
    if isinstance(node, Call) and loader_name(node.func) == "_builtin_type":
        return str(first_arg(node.func))
    return loader_name(node)


def first_arg(call: Call) -> Any:
    return call.args[0] if isinstance(call.args, tuple) and call.args else None


def storage_reasons(data: Any, allow: Allowlist, budget: pickle_vm.Budget) -> Iterable[str]:
    """Why the bytes `_load_from_bytes` hands to torch.load are not a tensor storage torch saved (a second
    unpickling, judged like the first: only storage classes and torch's rebuild functions)."""
    if not isinstance(data, bytes):
        yield f"gives torch.load {reader.describe(data, 0)} instead of a saved storage"
        return
    if data.startswith(ZIP_MAGIC):
        yield "gives torch.load a zip archive, whose data.pkl _load_from_bytes unpickles with weights_only=False"
        return
    traces = pickle_vm.run_sequence(data, LEGACY_PICKLES, budget)
    try:
        for trace in traces:
            yield from storage_trace_reasons(trace, allow)
    except (pickle_vm.CorruptPickle, pickle_vm.TooLarge) as error:
        yield f"gives torch.load bytes that are not a saved storage ({error})"


def storage_trace_reasons(trace: Trace, allow: Allowlist) -> Iterable[str]:
    for g in trace.globals:
        if not allow.is_storage_global(g.module, g.name):
            yield f"gives torch.load a pickle naming {g.dotted}"
    for call in trace.calls:
        target = callee(call)
        if target is None or target.dotted not in allow.storage_globals:
            yield f"gives torch.load a pickle calling {target.dotted if target else 'a computed callee'}"


def call_reasons(call: Call, allow: Allowlist, budget: pickle_vm.Budget) -> Iterable[str]:
    """Why making this call while loading is not something a genuine SB3 entry does."""
    target = callee(call)
    if target is None:
        return
    if target.name == "_load_from_bytes" and allow.is_loader(target.dotted):
        yield from storage_reasons(first_arg(call), allow, budget)
    elif allow.is_loader(target.dotted):
        yield from loader_reasons(target, call, allow)
    elif target.dotted in WRAPPERS:
        if not wrappable(first_arg(call), allow):
            yield f"calls {target.dotted} on {reader.describe(first_arg(call), 0)}, not on a function the pickle made or the user's own"
    elif not allow.is_value(target.module, target.name):
        yield f"calls {target.dotted} when loaded"


def wrappable(function: Any, allow: Allowlist) -> bool:
    """What a genuine partial wraps: a function the pickle made (its code is judged), a listed value, or a
    function of the user's own module by reference (contains code, judged so by data_only)."""
    if isinstance(function, Global):
        return allow.is_value(function.module, function.name) or is_user_module(function.module)
    return maker_name(function) in FUNCTION_MAKERS


def loader_reasons(target: Global, call: Call, allow: Allowlist) -> Iterable[str]:
    argument = first_arg(call)
    if target.name == "subimport" and argument not in allow.subimports:
        yield f"imports the module {argument} when loaded"
    elif target.name == "_builtin_type" and argument not in allow.builtin_types:
        yield f"reaches types.{argument} when loaded"
    elif target.name == "getitem" and not (isinstance(argument, Global) and argument.module in allow.getitem_targets):
        yield f"indexes {reader.describe(argument, 0)} when loaded"
    elif target.name in FILLERS and maker_name(argument) not in FILLERS[target.name]:
        yield f"{target.name} rewrites {reader.describe(argument, 0)}, which the pickle did not make, when loaded"


def build_reasons(trace: Trace) -> Iterable[str]:
    for target, _ in trace.builds:
        if isinstance(target, Global):
            yield f"rewrites the attributes of {target.dotted} when loaded"
        elif isinstance(target, Call) and loader_name(target) in NOT_BUILDABLE:
            yield f"rewrites the state of what {loader_name(target)} returns when loaded"


def children(node: Any, place: str) -> Iterable[Tuple[Any, str]]:
    """(child, place) pairs of a traced node; a callee is not a child (call_reasons judges it).

    A place is "data", "globals" (a value of a dict with string keys: function globals, where code reaches
    modules only through checked attribute paths) or "submodules" (cloudpickle's `_cloudpickle_submodules`
    list, the submodules a function's globals need imported) or "cell" (a closure cell's value, which code
    reads without an attribute path the judge can follow).
    """
    if isinstance(node, Call):
        yield node.args, CELL if loader_name(node) in ("_make_cell", "cell_set") else DATA
        for part in (node.state, node.items):
            yield part, DATA
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield item, place if place in (SUBMODULES, CELL) else DATA
    elif isinstance(node, Set_):
        for item in node.items:
            yield item, DATA
    elif isinstance(node, Dict_):
        for key, value in node.pairs:
            yield key, DATA
            yield value, SUBMODULES if key == "_cloudpickle_submodules" else GLOBALS if isinstance(key, str) else DATA


def value_reasons(node: Any, place: str, has_code: bool, allow: Allowlist) -> Iterable[str]:
    """Why `node`, standing as data (not as a callee), is not what a genuine entry holds there."""
    if isinstance(node, Global):
        if allow.is_value(node.module, node.name):
            return
        if is_user_module(node.module) and not has_code:
            return
        yield f"names {node.dotted}" + (" (a loader, as data)" if allow.is_loader(node.dotted) else "")
    elif isinstance(node, Call):
        name = loader_name(node)
        if name == "subimport" and place == DATA:
            yield f"hands the module {first_arg(node)} to code outside a globals dict or closure cell"
        elif name == "_builtin_type" and first_arg(node) in CODE_MAKERS:
            yield f"hands types.{first_arg(node)} to code"


def names_a_package(node: Dict_) -> bool:
    """Whether a globals dict gives relative imports a package to resolve in (importlib's _calc___package__
    reads __package__, then __spec__.parent, then __name__, whole when __path__ is there)."""
    name = node.get("__name__")
    return bool(node.get("__package__")) or node.get("__spec__") is not None or node.get("__path__") is not None or (isinstance(name, str) and "." in name)


def walk(trace: Trace, has_code: bool, allow: Allowlist) -> Tuple[List[str], Dict[str, Set[str]], bool]:
    """Value reasons for every node reachable as data, the modules each globals-dict name holds, and whether a
    globals dict names a package (where the code's relative imports would resolve)."""
    found: List[str] = []
    modules: Dict[str, Set[str]] = {}
    package = False
    seen: Set[Tuple[int, str]] = set()
    pending: List[Tuple[Any, str]] = [(trace.root, DATA)] + [pair for call in trace.calls for pair in children(call, DATA)]
    while pending:
        node, place = pending.pop()
        if isinstance(node, (Call, list, tuple, Set_, Dict_)):
            if (id(node), place) in seen:
                continue
            seen.add((id(node), place))
        found.extend(value_reasons(node, place, has_code, allow))
        if isinstance(node, Dict_):
            package = package or names_a_package(node)
            for key, value in node.pairs:
                if isinstance(key, str) and loader_name(value) == "subimport" and isinstance(first_arg(value), str):
                    modules.setdefault(key, set()).add(first_arg(value))
        pending.extend(children(node, place))
    return found, modules, package


def cell_value(cell: Any, filled: Dict[int, Any]) -> Any:
    """What a closure cell holds: `_make_cell(value)`, or an empty cell that `cell_set(cell, value)` filled."""
    if loader_name(cell) == "_make_cell":
        return first_arg(cell)
    return filled.get(id(cell))


def closures(trace: Trace) -> Dict[int, Tuple[Any, ...]]:
    """{id(code call): its function's closure cells}, from the function's maker and cloudpickle's state."""
    states = reader.function_states(trace)
    found: Dict[int, Tuple[Any, ...]] = {}
    for call in trace.calls:
        if maker_name(call) in FUNCTION_MAKERS and isinstance(call.args, tuple) and call.args:
            cells = states.get(id(call), Dict_()).get("__closure__")
            if not isinstance(cells, tuple) and len(call.args) > 4 and isinstance(call.args[4], tuple):
                cells = call.args[4]
            if isinstance(cells, tuple):
                found[id(call.args[0])] = cells
    return found


def closure_of(call: Call, fields: Dict[str, Any], cells: Tuple[Any, ...], filled: Dict[int, Any]) -> code_judge.Closure:
    def strings(key: str) -> Tuple[object, ...]:
        value = fields.get(key)
        return value if isinstance(value, tuple) else ()

    modules: Dict[str, Set[str]] = {}
    for name, cell in zip(strings("freevars"), cells):
        value = cell_value(cell, filled)
        if isinstance(name, str) and loader_name(value) == "subimport" and isinstance(first_arg(value), str):
            modules.setdefault(name, set()).add(first_arg(value))
    return code_judge.Closure(strings("varnames"), strings("cellvars"), strings("freevars"), modules)


def code_reasons(trace: Trace, modules: Dict[str, Set[str]], allow: Allowlist, package: bool, unlisted: List[str]) -> Iterable[str]:
    """Each code object's dangerous reasons (its unlisted uses go to `unlisted`), computed once per distinct
    code object however often it is shared; a module in a closure cell that no judged code can be linked to
    is a reason of its own."""
    judged: Dict[int, code_judge.Judged] = {}
    linked_cells: Set[int] = set()
    filled = {id(c.args[0]): c.args[1] for c in trace.calls if loader_name(c) == "cell_set" and isinstance(c.args, tuple) and len(c.args) == 2}
    cells_of = closures(trace)
    for call in trace.calls:
        if not reader.is_code_type(call.func):
            continue
        fields = reader.code_fields(call)
        if fields is None:
            yield f"holds a code object of an unknown layout ({len(call.args) if isinstance(call.args, tuple) else '?'} fields)"
            continue
        code, names = fields.get("code"), fields.get("names")
        if not isinstance(code, bytes) or not isinstance(names, tuple):
            yield "holds a code object whose bytecode or names cannot be read"
            continue
        cells = cells_of.get(id(call), ())
        linked_cells.update(id(cell_value(cell, filled)) for cell in cells)
        label = reader.describe(fields.get("qualname", fields.get("name")))
        if id(call) not in judged:
            judged[id(call)] = code_judge.reasons(code, names, len(call.args), modules, allow, closure_of(call, fields, cells, filled), package)
            unlisted.extend(f"{label} {reason}" for reason in judged[id(call)].unlisted)
        for reason in judged[id(call)].reaching:
            yield f"{label} {reason} when called"
    held = [first_arg(c) for c in trace.calls if loader_name(c) == "_make_cell"] + list(filled.values())
    for value in held:
        if loader_name(value) == "subimport" and id(value) not in linked_cells:
            yield f"hands the module {first_arg(value)} to code through a closure cell no judged code reads"


def reasons(trace: Trace, allow: Allowlist) -> Judgement:
    """Why loading this entry, or calling the code in it, may run something a genuine entry never does."""
    has_code = any(reader.is_code_type(call.func) for call in trace.calls)
    budget = pickle_vm.Budget()
    found = [reason for call in trace.calls for reason in call_reasons(call, allow, budget)]
    found.extend(build_reasons(trace))
    value_found, modules, package = walk(trace, has_code, allow)
    found.extend(value_found)
    unlisted: List[str] = []
    found.extend(code_reasons(trace, modules, allow, package, unlisted))
    return Judgement(unique(found), unique(unlisted))


def unique(items: Iterable[str]) -> List[str]:
    return list(dict.fromkeys(items))

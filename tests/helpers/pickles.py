"""Pickles written opcode by opcode: gadget globals (callables that reach out of a loader), each placed in
every position a loader reaches it from (as a callee of REDUCE, INST, OBJ, NEWOBJ and as plain data), in
protocols 0, 2 and 4, behind a `(l0` prefix and inside an `ep_info_buffer`-like dict."""

from __future__ import annotations

GADGETS = [
    ("os", "system"), ("posix", "system"), ("nt", "system"), ("subprocess", "Popen"), ("subprocess", "check_output"),
    ("pydoc", "locate"), ("pkgutil", "resolve_name"), ("timeit", "timeit"), ("builtins", "eval"), ("builtins", "exec"),
    ("builtins", "getattr"), ("builtins", "__import__"), ("builtins", "vars"), ("builtins", "open"),
    ("builtins", "compile"), ("_operator", "attrgetter"), ("operator", "methodcaller"), ("importlib", "import_module"),
    ("runpy", "run_path"), ("code", "InteractiveInterpreter"), ("ctypes", "CDLL"), ("pickle", "loads"),
    ("marshal", "loads"), ("shutil", "rmtree"), ("webbrowser", "open"), ("functools", "partial"),
    ("numpy", "load"), ("numpy.lib.npyio", "load"), ("torch", "load"), ("torch.storage", "_load_from_bytes"),
    ("stable_baselines3.common.save_util", "load_from_zip_file"), ("stable_baselines3.common.save_util", "json_to_data"),
    ("gymnasium", "make"), ("gymnasium.envs.registration", "load_env_creator"), ("typing", "get_type_hints"),
    ("zipfile", "os.system"), ("numpy", "testing.os.system"), ("builtins", "__builtins__"), ("sys", "modules"),
    ("cloudpickle.cloudpickle", "_make_function.__globals__"), ("copyreg", "_reconstructor.__globals__"),
    ("collections", "deque.__init__.__globals__"), ("gymnasium.spaces.box", "Box.__init__"),
]


def unicode4(text: str) -> bytes:
    """SHORT_BINUNICODE of `text`."""
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def global4(module: str, name: str) -> bytes:
    """`module.name` pushed as protocol 4 does: two strings and STACK_GLOBAL."""
    return unicode4(module) + unicode4(name) + b"\x93"


def global0(module: str, name: str) -> bytes:
    """`module.name` pushed as protocol 0 does: GLOBAL."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def placements(module: str, name: str) -> dict:
    """The same gadget in each position a loader reaches it from."""
    arg4 = unicode4("true")
    return {
        "reduce-p4": b"\x80\x04" + global4(module, name) + arg4 + b"\x85R.",
        "reduce-p0": global0(module, name) + b"(Vtrue\ntR.",
        "inst-p0": b"(Vtrue\ni" + module.encode() + b"\n" + name.encode() + b"\n.",
        "obj-p2": b"\x80\x02(" + global0(module, name) + b"Vtrue\no.",
        "newobj-p4": b"\x80\x04" + global4(module, name) + arg4 + b"\x85\x81.",
        "list-prefix-p0": b"(l0" + global0(module, name) + b"(Vtrue\ntR.",
        "data-in-dict-p4": b"\x80\x04}" + unicode4("r") + global4(module, name) + b"s.",
        "data-in-list-p2": b"\x80\x02]" + global0(module, name) + b"a\x85.",
        "build-state-p4": b"\x80\x04" + global4("collections", "OrderedDict") + b")R}" + unicode4("x") + global4(module, name) + b"sb.",
    }


# ("module.name:position", payload) for every gadget in every position: each one a loader must refuse.
GADGET_CASES = [(f"{m}.{n}:{where}", payload) for m, n in GADGETS for where, payload in placements(m, n).items()]

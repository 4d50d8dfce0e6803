"""The allowlist judgement of pickled SB3 entries, attacked: gadgets in every position, code that reaches out.

Payloads are generated (helpers/pickles.py): each gadget global is placed as a callee (REDUCE, INST, OBJ,
NEWOBJ) and as plain data, in protocols 0, 2 and 4, behind a `(l0` prefix and inside an `ep_info_buffer`-like
dict. Every one must be dangerous; genuine values pickled by the real cloudpickle must not be.
"""

from __future__ import annotations

import base64
import collections
import math
import pickle
import typing

import cloudpickle
import numpy as np
import pytest

from envdoctor.sb3.classify import classify
from conftest import TEST_DATA
from helpers.pickles import GADGET_CASES, global0, global4, unicode4


def classified(payload: bytes, key: str = "learning_rate") -> dict:
    return classify(key, {":serialized:": base64.b64encode(payload).decode()}, "3.11")


@pytest.mark.parametrize("case, payload", GADGET_CASES, ids=[c for c, _ in GADGET_CASES])
def test_every_gadget_in_every_position_is_dangerous(case, payload):
    facts = classified(payload)
    assert facts["verdict"] == "dangerous", (case, facts["verdict"], facts["reasons"])


def test_the_issues_getitem_on_vars_of_builtins_is_dangerous():
    payload = b"\x80\x04" + global4("_operator", "getitem") + global4("builtins", "vars") + global4("builtins", "__import__") + b"\x85R" + unicode4("exec") + b"\x86R."
    facts = classified(payload)
    assert facts["verdict"] == "dangerous" and any("builtins.vars" in r for r in facts["reasons"])


def test_getattr_on_an_allowed_class_still_reaches_out():
    payload = b"\x80\x04" + global4("builtins", "getattr") + global4("collections", "deque") + unicode4("__init__") + b"\x86R."
    assert classified(payload)["verdict"] == "dangerous"


def test_build_rewriting_a_class_or_a_module_is_dangerous():
    on_class = b"\x80\x04" + global4("collections", "deque") + b"N}" + unicode4("__eq__") + b"K\x01s\x86b."
    module = b"\x80\x04" + global4("cloudpickle.cloudpickle", "subimport") + unicode4("math") + b"\x85R}" + unicode4("pi") + b"K\x03sb."
    assert classified(on_class)["verdict"] == "dangerous"
    assert classified(module)["verdict"] == "dangerous"


@pytest.mark.parametrize("module", ["os", "subprocess", "importlib", "numpy.lib", "torch.hub", "sys"])
def test_subimport_of_a_module_outside_the_list_is_dangerous(module):
    payload = b"\x80\x04" + global4("cloudpickle.cloudpickle", "subimport") + unicode4(module) + b"\x85R."
    assert classified(payload)["verdict"] == "dangerous"


@pytest.mark.parametrize("name", ["CodeType", "FunctionType"])
def test_code_makers_handed_to_code_as_data_are_dangerous(name):
    payload = b"\x80\x04}" + unicode4("make") + global4("cloudpickle.cloudpickle", "_builtin_type") + unicode4(name) + b"\x85Rs."
    assert classified(payload)["verdict"] == "dangerous"


def reaching_code():
    """Schedules whose bytecode reaches outside what genuine schedules use (none of them is ever called)."""
    def with_eval(p):
        return eval("p * 0.1")

    def with_getattr(p):
        return getattr(math, "cos")(p)

    def with_import(p):
        return __import__("os").system("true") or p

    def with_subclasses(p):
        return ().__class__.__base__.__subclasses__() and p

    def with_globals(p):
        return with_globals.__globals__["__builtins__"] and p

    def with_open(p):
        return open("/etc/hostname").read() and p

    def with_np_load(p):
        return np.load("/tmp/x.npy", allow_pickle=True) + p

    def with_np_lib(p):
        return np.lib.npyio.load("/tmp/x") + p

    def np_handed_around(p):
        module = np
        return module.load("/tmp/x") + p

    def with_math_loader(p):
        return math.__loader__ and p

    def imports_subprocess(p):
        import subprocess
        return subprocess.call(["true"]) + p

    def from_os_import(p):
        from os import system
        return system("true") + p

    def with_compile(p):
        return compile("1", "x", "eval") and p

    def with_frame(p):
        return (lambda: 0).__code__ and p

    def with_vars(p):
        return vars() and p

    def with_breakpoint(p):
        return breakpoint() or p

    return [with_eval, with_getattr, with_import, with_subclasses, with_globals, with_open, with_np_load, with_np_lib,
            np_handed_around, with_math_loader, imports_subprocess, from_os_import, with_compile, with_frame, with_vars,
            with_breakpoint]


@pytest.mark.parametrize("schedule", reaching_code(), ids=lambda f: f.__name__)
def test_code_that_reaches_outside_the_allowlist_is_dangerous(schedule):
    facts = classified(cloudpickle.dumps(schedule))
    assert facts["verdict"] == "dangerous", facts["reasons"]


def genuine_values():
    """What SB3 really serialises, pickled by the real cloudpickle."""
    import gymnasium

    def linear_schedule(initial):
        def func(progress_remaining: float) -> float:
            return progress_remaining * initial
        return func

    def cosine(progress):
        return 0.5 * (1 + np.cos(np.pi * (1 - progress))) * 3e-4

    def with_math(progress):
        return max(1e-5, math.exp(-3 * (1 - progress)) * 1e-3)

    box = gymnasium.spaces.Box(low=-1.0, high=1.0, shape=(4,), dtype=np.float32)
    box.seed(0)
    return {
        "closure": linear_schedule(3e-4),
        "lambda": lambda _: 0.1,
        "numpy-closure": cosine,
        "math-closure": with_math,
        "box": box,
        "discrete": gymnasium.spaces.Discrete(3),
        "multidiscrete": gymnasium.spaces.MultiDiscrete([2, 3]),
        "dict-space": gymnasium.spaces.Dict({"a": gymnasium.spaces.Discrete(2), "b": box}),
        "array": np.zeros((2, 4), dtype=np.float32),
        "bool-array": np.array([True, False]),
        "ep-info": collections.deque([{"r": np.float64(1.5), "l": 10, "t": 0.25}], maxlen=100),
        "success": collections.deque([True, False], maxlen=100),
        "ordered": collections.OrderedDict(a=1.0),
        "generator": np.random.default_rng(0),
        "annotations": typing.Dict[str, typing.List[float]],
        "float": 0.5,
    }


@pytest.mark.parametrize("name, value", list(genuine_values().items()), ids=list(genuine_values()))
def test_genuine_values_are_not_dangerous(name, value):
    facts = classified(cloudpickle.dumps(value), key=name)
    assert facts["verdict"] in ("data", "code"), facts["reasons"]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_genuine_values_in_every_protocol_are_not_dangerous(protocol):
    value = {"r": np.float64(1.0), "shape": (4,), "seq": collections.deque([1, 2]), "set": frozenset({1}), "l": [1, [2]]}
    facts = classified(cloudpickle.dumps(value, protocol=protocol))
    assert facts["verdict"] == "data", facts["reasons"]


def model_with(tmp_path, entries: dict):
    import json
    import zipfile

    path = tmp_path / "model.zip"
    data = {"gamma": 0.99, **{k: {":type:": "<class 'object'>", ":serialized:": base64.b64encode(v).decode()} for k, v in entries.items()}}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data, indent=4))
        archive.writestr("_stable_baselines3_version", "2.9.2")
        archive.writestr("system_info.txt", "- Python: 3.11.7\n")
    return path


ISSUE_GADGETS = {
    "pydoc.locate": lambda cmd: b"\x80\x04" + global4("pydoc", "locate") + unicode4("os.system") + b"\x85R" + unicode4(cmd) + b"\x85R.",
    "pkgutil.resolve_name": lambda cmd: b"\x80\x04" + global4("pkgutil", "resolve_name") + unicode4("os:system") + b"\x85R" + unicode4(cmd) + b"\x85R.",
    "timeit.timeit": lambda cmd: b"\x80\x04" + global4("timeit", "timeit") + b"(" + unicode4(f"__import__('os').system('{cmd}')")
    + unicode4("pass") + global4("timeit", "default_timer") + b"K\x01tR.",
}


@pytest.mark.parametrize("gadget", list(ISSUE_GADGETS))
@pytest.mark.parametrize("key", ["learning_rate", "ep_info_buffer"])
def test_issue_gadgets_are_dangerous_in_inspect_and_check_and_never_copied_by_sanitize(tmp_path, gadget, key):
    import json
    import zipfile

    from conftest import run_envdoctor

    marker = tmp_path / "PWNED"
    pickle.loads(ISSUE_GADGETS[gadget](f"touch {marker}"))
    assert marker.exists()  # the payload is live for a real unpickler
    marker.unlink()
    payload = ISSUE_GADGETS[gadget](f"touch {marker}")
    path = model_with(tmp_path, {key: payload})
    inspected = run_envdoctor("inspect", str(path), "--json", "-")
    assert inspected.returncode == 1 and "sb3.dangerous-pickle" in [f["id"] for f in inspected.json()["findings"]]
    checked = run_envdoctor("check", "--no-probe", "--no-save", "--only", "sb3", "--model", str(path), "--json", "-")
    assert checked.returncode == 1 and "sb3.dangerous-pickle" in [f["id"] for f in checked.json()["findings"]]
    out = tmp_path / "clean.zip"
    result = run_envdoctor("sanitize", str(path), "-o", str(out), "--learning-rate", "0.001")
    if key == "learning_rate":  # a schedule is replaced by a number, never copied
        assert result.returncode == 0, result
        data = json.loads(zipfile.ZipFile(out).read("data"))
        assert data["learning_rate"] == 0.001 and base64.b64encode(payload).decode() not in json.dumps(data)
    else:
        assert result.returncode == 2 and key in result.stderr and not out.exists()
    assert not marker.exists()


@pytest.mark.parametrize("filler", ["_function_setstate", "_class_setstate", "cell_set"])
def test_fillers_may_only_fill_what_the_pickle_made(filler):
    target = global4("stable_baselines3.common.utils", "FloatSchedule")
    payload = b"\x80\x04" + global4("cloudpickle.cloudpickle", filler) + target + b"}N\x86\x86R."
    facts = classified(payload)
    assert facts["verdict"] == "dangerous" and any("did not make" in r for r in facts["reasons"])


def test_code_naming_beyond_its_names_is_dangerous():
    import sys

    from envdoctor.sb3 import allowlist, code_judge

    def schedule(p):
        return min(p, 1.0)

    layout = 18 if sys.version_info >= (3, 11) else 16  # LOAD_GLOBAL 0 with no names reads past the tuple
    found = code_judge.reasons(schedule.__code__.co_code, (), layout, {}, allowlist.load())
    assert any("co_names[0] of 0" in r for r in found.reaching), found


def test_a_member_climbing_out_of_its_folder_is_an_unsafe_member_finding(tmp_path):
    import zipfile

    from conftest import run_envdoctor

    path = model_with(tmp_path, {})
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("../../.bashrc", "echo owned\n")
    run = run_envdoctor("inspect", str(path), "--json", "-")
    assert run.returncode == 1 and [f["id"] for f in run.json()["findings"]] == ["sb3.unsafe-member"]
    assert "../../.bashrc" in run.json()["findings"][0]["evidence"]["members"]


def observed():
    import json

    return json.loads((TEST_DATA / "sb3" / "observed_globals.json").read_text(encoding="utf-8"))


def test_every_global_seen_in_real_models_is_allowed_in_the_role_it_was_seen_in():
    """observed_globals.json: every global of 430 real models (SB3 1.8-2.9) and 180 cloudpickle payloads
    (Python 3.7-3.13), with how each was used; scripts/sb3-corpus made it."""
    from envdoctor.sb3 import allowlist

    allow = allowlist.load()
    refused = []
    for dotted, seen in observed()["globals"].items():
        uses = {example["used"] for example in seen["seen_in"]}
        module, name = seen["module"], seen["name"]
        value = allow.is_value(module, name)
        if ("called" in uses and not (value or allow.is_loader(dotted))) or ("referenced" in uses and not value):
            refused.append((dotted, sorted(uses)))
    assert refused == []
    assert all(allow.is_storage_global(*g.rsplit(".", 1)) for g in observed()["torch_load_globals"])
    assert set(observed()["builtin_types"]) <= allow.builtin_types


@pytest.mark.slow
def test_a_tensor_in_data_is_judged_through_the_storage_torch_loads_and_contains_code():
    """Not dangerous (its storage is what torch saved), but not data either: _load_from_bytes runs torch.load."""
    import torch

    facts = classified(cloudpickle.dumps(torch.zeros(3)), key="weights")
    assert facts["verdict"] == "code" and any("_load_from_bytes" in r for r in facts["reasons"]), facts["reasons"]


def test_a_storage_whose_bytes_hide_a_second_payload_is_dangerous():
    inner = b"\x80\x02" + global0("posix", "system") + b"(Vtrue\ntR."
    payload = b"\x80\x04" + global4("torch.storage", "_load_from_bytes") + b"C" + bytes([len(inner)]) + inner + b"\x85R."
    facts = classified(payload, key="weights")
    assert facts["verdict"] == "dangerous" and any("posix.system" in r for r in facts["reasons"])


def test_a_module_in_a_closure_cell_is_judged_by_how_the_code_uses_it():
    def make(kind):
        import numpy as np_local

        if kind == "cos":
            return lambda p: float(np_local.cos(p))
        return lambda p: np_local.load("/tmp/x.npy") + p

    assert classified(cloudpickle.dumps(make("cos")))["verdict"] == "code"
    assert classified(cloudpickle.dumps(make("load")))["verdict"] == "dangerous"


def test_a_dangerous_entry_is_never_met_with_advice_to_load_it(tmp_path):
    from conftest import run_envdoctor

    path = model_with(tmp_path, {"ep_info_buffer": ISSUE_GADGETS["pydoc.locate"]("true")})
    [finding] = run_envdoctor("inspect", str(path), "--json", "-").json()["findings"]
    advice = " ".join(r["summary"] for r in finding["remedies"])
    assert "real classes" not in advice and "do not load" in advice and "'ep_info_buffer': None" in advice

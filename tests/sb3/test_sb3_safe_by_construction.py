"""Safe by construction: the property every sanitised copy holds, and attacks by someone who read allowlist.json.

The property, not the list of attacks, is the guarantee: every pickle in every copy sanitize writes is
parsed by the symbolic machine and holds only the sanitiser's own opcodes and data_only.py's constructors,
and every `.pth` it carries is one torch.load(weights_only=True) admits (helpers/sanitised.py). It is checked
over genuine values, over every hostile case below and the gadget cases of helpers/pickles.py (those
test_pickle_allowlist.py attacks with), and (slow) over the real SB3 test models.
Each attack also pins what inspect says: never *data*, and dangerous where it reaches out.
"""

from __future__ import annotations

import base64
import collections
import json
import pickle
import types
import zipfile
from pathlib import Path
from typing import Any, Dict

import cloudpickle
import numpy as np
import pytest

from envdoctor.errors import UsageError
from envdoctor.sb3.classify import classify
from envdoctor.sb3.sanitize import sanitize
from conftest import run_envdoctor
from helpers.model_files import model_members, raw_zip, stored, torch_zip
from helpers.pickles import GADGET_CASES, global0, global4, unicode4
from helpers.sanitised import assert_sanitised_copy

# ---------------------------------------------------------------- models, copies and genuine values


def entry(payload: bytes, type_text: str = "<class 'object'>") -> Dict[str, str]:
    return {":type:": type_text, ":serialized:": base64.b64encode(payload).decode()}


def write_model(folder: Path, data: Dict[str, Any], extra=()) -> Path:
    path = folder / "model.zip"
    path.write_bytes(raw_zip([*model_members(data), *extra]))
    return path


def sanitised(path: Path, **overrides: float):
    """The copy sanitize wrote, or None when it refused (one line, exit 2: UsageError in process)."""
    out = path.parent / "out.zip"
    try:
        sanitize(path, out, {"learning_rate": None, "clip_range": None, "clip_range_vf": None, **overrides})
    except UsageError:
        assert not out.exists()
        return None
    return out


def same(a: Any, b: Any) -> bool:
    if hasattr(a, "get_state"):
        return str(a.get_state()) == str(b.get_state())
    return repr(a) == repr(b) and repr(getattr(a, "__dict__", None)) == repr(getattr(b, "__dict__", None))


def genuine_values() -> Dict[str, Any]:
    import gymnasium
    from stable_baselines3.common.noise import NormalActionNoise
    from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit
    from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule

    box = gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
    box.seed(0)
    box.sample()
    return {
        "observation_space": gymnasium.spaces.Dict({"a": gymnasium.spaces.Discrete(3), "b": box}),
        "action_space": gymnasium.spaces.MultiDiscrete([2, 3]),
        "_last_obs": np.arange(6, dtype=np.float32).reshape(2, 3),
        "_last_episode_starts": np.array([True, False]),
        "ep_info_buffer": collections.deque([{"r": np.float64(1.5), "l": 10, "t": 0.25}], maxlen=100),
        "ep_success_buffer": collections.deque([True], maxlen=100),
        "lr_schedule": FloatSchedule(ConstantSchedule(3e-4)),
        "exploration_schedule": LinearSchedule(1.0, 0.05, 0.1),
        "action_noise": NormalActionNoise(np.zeros(2), np.ones(2)),
        "train_freq": TrainFreq(4, TrainFrequencyUnit.STEP),
        "policy_kwargs": {"net_arch": [64, 64], "activation_fn": __import__("torch").nn.Tanh},
        "random_state": np.random.RandomState(1),
    }


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_genuine_values_are_data_and_written_again_as_the_sanitisers_own_pickles(tmp_path, protocol):
    values = genuine_values()
    payloads = {key: cloudpickle.dumps(value, protocol=protocol) for key, value in values.items()}
    path = write_model(tmp_path, {"gamma": 0.99, **{k: entry(p) for k, p in payloads.items()}})
    verdicts = {e["key"]: e["verdict"] for e in run_envdoctor("inspect", str(path), "--json", "-").json()["facts"]["models"]["files"][0]["entries"]}
    assert set(verdicts.values()) == {"data"}, verdicts
    out = sanitised(path)
    assert_sanitised_copy(out)
    written = json.loads(zipfile.ZipFile(out).read("data"))
    for key, value in values.items():  # the same values, read back by the real unpickler
        back = pickle.loads(base64.b64decode(written[key][":serialized:"]))
        assert same(back, value), key
        if isinstance(value, np.ndarray):
            assert back.flags.writeable == pickle.loads(payloads[key]).flags.writeable


@pytest.mark.parametrize("case, payload", GADGET_CASES[::7], ids=[c for c, _ in GADGET_CASES[::7]])
@pytest.mark.parametrize("key", ["learning_rate", "ep_info_buffer"])
def test_every_copy_of_a_model_with_a_gadget_holds_only_the_sanitisers_pickles(tmp_path, case, payload, key):
    path = write_model(tmp_path, {"gamma": 0.99, key: entry(payload)})
    out = sanitised(path, learning_rate=0.001)
    assert (out is None) == (key != "learning_rate")  # a schedule is replaced by a number, anything else refused
    if out:
        assert_sanitised_copy(out, [entry(payload)[":serialized:"]])


# ---------------------------------------------------------------- attacks, by someone who read allowlist.json


def storage_zip(inner_pickle: bytes) -> bytes:
    return torch_zip(stored("archive/data.pkl", inner_pickle))


def load_from_bytes(blob: bytes) -> bytes:
    return b"\x80\x02" + global0("torch.storage", "_load_from_bytes") + b"C" + bytes([len(blob)]) + blob if len(blob) < 256 else (
        b"\x80\x04" + global4("torch.storage", "_load_from_bytes") + b"B" + len(blob).to_bytes(4, "little") + blob + b"\x85R.")


def with_globals(function, **extra):
    """A copy of `function` whose globals hold `extra` too (how a crafted pickle sets them)."""
    return types.FunctionType(function.__code__, {**function.__globals__, **extra}, function.__name__, function.__defaults__, function.__closure__)


def by_value():
    """Functions cloudpickle writes by value (defined here, not importable): what an attacker ships."""

    def relative_import(progress):
        from . import path  # with __package__ = "os" this is os.path, with "ctypes" ctypes' internals
        return progress * len(path.sep)

    def ctypes_of_an_array(progress):
        return np.zeros(1).ctypes._ctypes.pythonapi and progress

    def module_in_a_default(progress, m=np):
        return m.load("/tmp/x.npy") + progress

    def module_in_a_nested_dict(progress):
        return CONFIG["np"].load("/tmp/x.npy") + progress  # noqa: F821 (given in the pickled globals)

    return relative_import, ctypes_of_an_array, module_in_a_default, module_in_a_nested_dict


RELATIVE_IMPORT, CTYPES_OF_AN_ARRAY, MODULE_IN_A_DEFAULT, MODULE_IN_A_NESTED_DICT = by_value()


def partial_of(target: bytes) -> bytes:
    return b"\x80\x04" + global4("functools", "partial") + target + b"\x85R" + b"(" + target + unicode4("touch /tmp/x") + b"\x85}Nt" + b"b."


DATA_ATTACKS = {
    # _load_from_bytes of a zip: torch reads an archive and unpickles its data.pkl with weights_only=False
    "load-from-bytes-zip": lambda: load_from_bytes(storage_zip(b"\x80\x02" + global0("posix", "system") + b"X\x04\x00\x00\x00trueq\x00\x85R.")),
    "partial-of-system": lambda: partial_of(global4("posix", "system")),
    "relative-import-via-package": lambda: cloudpickle.dumps(with_globals(RELATIVE_IMPORT, __package__="os")),
    "ctypes-of-a-value": lambda: cloudpickle.dumps(CTYPES_OF_AN_ARRAY),
    "module-in-a-default": lambda: cloudpickle.dumps(MODULE_IN_A_DEFAULT),
    "module-in-a-nested-dict": lambda: cloudpickle.dumps(with_globals(MODULE_IN_A_NESTED_DICT, CONFIG={"np": np})),
    "space-state-naming-system": lambda: b"\x80\x04" + global4("gymnasium.spaces.discrete", "Discrete") + b")\x81}" + unicode4("n") + global4("posix", "system") + b"sb.",
    "bit-generator-of-popen": lambda: b"\x80\x04" + global4("numpy.random._pickle", "__bit_generator_ctor") + global4("subprocess", "Popen") + b"\x85R.",
}
# Not reaching anything known, but not data either: never safe, a warning.
CODE_ATTACKS = {
    "partial-of-allowed-class": lambda: partial_of(global4("stable_baselines3.common.policies", "ActorCriticPolicy")),
    "policy-class-called-while-loading": lambda: b"\x80\x04" + global4("stable_baselines3.common.policies", "ActorCriticPolicy") + b")R.",
    "seed-sequence-of-another-type": lambda: b"\x80\x04" + global4("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence")
    + global4("gymnasium.spaces.box", "Box") + b"K\x00N\x87R.",
    "codecs-to-another-codec": lambda: b"\x80\x04" + global4("_codecs", "encode") + unicode4("x") + unicode4("rot13") + b"\x86R.",
    "dtype-built-on-a-class": lambda: b"\x80\x04" + global4("numpy", "dtype") + b"N\x85b.",
    "nested-2000-deep": lambda: b"\x80\x04" + b"]" * 2000 + b"a" * 1999 + b".",
    "class-name-with-a-newline": lambda: b"\x80\x04" + global4("stable_baselines3.common.policies", "ActorCriticPolicy\n") + b".",
    "a-users-module": lambda: b"\x80\x04" + global4("my_project.schedules", "decaying") + b".",
    "persistent-id-in-data": lambda: b"\x80\x04" + unicode4("storage") + b"Q.",
    "appends-to-an-ordered-dict": lambda: b"\x80\x04" + global4("collections", "OrderedDict") + b")R(K\x01K\x02e.",
}


@pytest.mark.parametrize("attack", DATA_ATTACKS.values(), ids=DATA_ATTACKS.keys())
def test_attacks_that_reach_out_are_dangerous(attack):
    facts = classify("policy_kwargs", entry(attack()), "3.11")
    assert facts["verdict"] == "dangerous", facts["reasons"]


@pytest.mark.parametrize("attack", CODE_ATTACKS.values(), ids=CODE_ATTACKS.keys())
def test_what_is_not_data_is_never_safe(attack):
    facts = classify("policy_kwargs", entry(attack()), "3.11")
    assert facts["verdict"] in ("code", "dangerous", "corrupt") and facts["reasons"], facts


@pytest.mark.parametrize("attack", [*DATA_ATTACKS.values(), *CODE_ATTACKS.values()], ids=[*DATA_ATTACKS, *CODE_ATTACKS])
@pytest.mark.parametrize("key", ["clip_range", "policy_kwargs"])
def test_no_attack_reaches_a_sanitised_copy(tmp_path, attack, key):
    payload = entry(attack())
    out = sanitised(write_model(tmp_path, {"gamma": 0.99, key: payload}))
    assert (out is None) == (key == "policy_kwargs")  # a schedule becomes a number; anything else is refused
    if out:
        assert_sanitised_copy(out, [payload[":serialized:"]])
        assert json.loads(zipfile.ZipFile(out).read("data"))[key] == 0.2


def test_the_live_zip_in_load_from_bytes_runs_a_command_in_torch(tmp_path):
    """The attack is live: torch really unpickles the zip's data.pkl (so envdoctor must not read it as legacy)."""
    torch = pytest.importorskip("torch")
    marker = tmp_path / "PWNED"
    inner = b"\x80\x02" + global0("posix", "system") + b"X" + len(f"touch {marker}").to_bytes(4, "little") + f"touch {marker}".encode() + b"\x85R."
    try:
        torch.storage._load_from_bytes(storage_zip(inner))
    except Exception:  # noqa: S110 (what torch makes of the payload's result does not matter)
        pass
    assert marker.exists()


def pth(inner_pickle: bytes, name: str = "policy.pth"):
    return stored(name, storage_zip(inner_pickle))


PTH_ATTACKS = {
    "reduce-of-system": b"\x80\x02" + global0("posix", "system") + b"X\x04\x00\x00\x00trueq\x00\x85R.",
    "eval-in-builtins": b"\x80\x02" + global0("builtins", "eval") + b"X\x01\x00\x00\x001\x85R.",
    "load-from-bytes": b"\x80\x02" + global0("torch.storage", "_load_from_bytes") + b"C\x01x\x85R.",
    "stack-global-of-an-allowed-name": b"\x80\x04" + global4("collections", "OrderedDict") + b")R.",
    "persistent-id-not-a-storage": b"\x80\x02X\x04\x00\x00\x00evilq\x00\x85Q.",
    "build-on-a-class": b"\x80\x02" + global0("torch", "Tensor") + b"}b.",
    "append-to-a-call": b"\x80\x02" + global0("torch", "Size") + b")R(K\x01e.",
    "not-a-zip": None,
    "legacy-pickle-before-a-zip": "prefix",
    "data-pkl-twice": "twice",
}


@pytest.mark.parametrize("name", PTH_ATTACKS, ids=PTH_ATTACKS)
@pytest.mark.parametrize("member", ["policy.pth", "policy.optimizer.pth", "pytorch_variables.pth"])
def test_weights_torch_would_refuse_are_dangerous_and_never_copied(tmp_path, name, member):
    payload = PTH_ATTACKS[name]
    state = pickle.dumps(collections.OrderedDict(bias=0.5), protocol=2)
    if payload is None:
        bad = stored(member, b"\x80\x02]q\x00." * 8)
    elif payload == "prefix":  # torch reads the leading pickle (legacy format); zipfile finds the zip behind it
        bad = stored(member, PTH_ATTACKS["reduce-of-system"] + storage_zip(state))
    elif payload == "twice":
        bad = stored(member, torch_zip(stored("archive/data.pkl", state), stored("archive/data.pkl", PTH_ATTACKS["reduce-of-system"])))
    else:
        bad = pth(payload, member)
    path = tmp_path / "model.zip"
    members = [m for m in model_members({"gamma": 0.99}) if m.name != member]
    path.write_bytes(raw_zip([*members, bad]))
    run = run_envdoctor("inspect", str(path), "--json", "-")
    assert run.returncode == 1, run
    [finding] = [f for f in run.json()["findings"] if f["id"] == "sb3.dangerous-pickle"]
    assert list(finding["evidence"]["members"]) == [member]
    refused = run_envdoctor("sanitize", str(path), "-o", str(tmp_path / "out.zip"))
    assert refused.returncode == 2 and f"member {member}" in refused.stderr and "weights_only=True" in refused.stderr
    assert not (tmp_path / "out.zip").exists()


def test_inspect_shows_each_weights_members_judgement(tmp_path):
    path = tmp_path / "model.zip"
    members = [m for m in model_members({"gamma": 0.99}) if m.name != "policy.pth"]
    path.write_bytes(raw_zip([*members, pth(PTH_ATTACKS["eval-in-builtins"])]))
    text = run_envdoctor("inspect", str(path)).stdout
    assert "weights (judged as torch.load(weights_only=True) reads them):" in text
    assert "  policy.pth               dangerous\n      archive/data.pkl names builtins.eval" in text


def test_a_closure_learning_rate_is_a_warning_that_names_it(tmp_path):
    path = write_model(tmp_path, {"gamma": 0.99, "learning_rate": entry(cloudpickle.dumps(lambda progress: 3e-4 * progress))})
    run = run_envdoctor("inspect", str(path), "--json", "-")
    assert run.returncode == 0, run  # a warning: below the default --fail-on error
    [finding] = [f for f in run.json()["findings"] if f["severity"] != "info"]
    assert (finding["id"], finding["severity"]) == ("sb3.contains-code", "warning")
    assert finding["title"] == (
        "model.zip contains 1 pickled function (learning_rate): code cannot be proven safe by reading it; "
        "`envdoctor sanitize` writes a copy without it"
    )


def test_a_members_sb3_never_reads_is_dropped_not_copied(tmp_path):
    path = write_model(tmp_path, {"gamma": 0.99}, [stored("payload.pkl", pickle.dumps(print))])
    out = sanitised(path)
    with zipfile.ZipFile(out) as archive:
        assert "payload.pkl" not in archive.namelist()
        assert json.loads(archive.read("envdoctor_sanitized.json"))["dropped"] == {"member payload.pkl": "SB3 never reads it"}


def test_code_sb3_makes_again_at_load_is_dropped_with_a_line_in_the_audit(tmp_path):
    path = write_model(tmp_path, {"gamma": 0.99, "exploration_schedule": entry(cloudpickle.dumps(lambda p: 0.05 + p))})
    out = sanitised(path)
    with zipfile.ZipFile(out) as archive:
        assert "exploration_schedule" not in json.loads(archive.read("data"))
        assert "DQN makes it again" in json.loads(archive.read("envdoctor_sanitized.json"))["dropped"]["exploration_schedule"]
    assert_sanitised_copy(out)


def test_a_partial_of_the_users_own_function_by_reference_contains_code():
    payload = b"\x80\x04" + global4("functools", "partial") + global4("my_project.schedules", "linear") + b"\x85R."
    facts = classify("learning_rate", entry(payload), "3.11")
    assert facts["verdict"] == "code", facts["reasons"]


def test_genuine_closures_partial_and_errstate_contain_code_and_are_not_dangerous():
    import functools

    def linear(initial, progress):
        return initial * progress

    def quiet(progress):
        with np.errstate(divide="ignore"):
            return float(np.clip(1e-3 / np.float64(progress), 0, 1e-3))

    for value in (functools.partial(linear, 3e-4), quiet):
        facts = classify("learning_rate", entry(cloudpickle.dumps(value)), "3.11")
        assert facts["verdict"] == "code", facts["reasons"]
    assert any("numpy.errstate" in r for r in facts["reasons"])  # what the code uses, for forensics


# ---------------------------------------------------------------- the two residues


def test_a_deeply_nested_optimizer_state_is_judged_not_a_traceback(tmp_path):
    deep = b"\x80\x02" + b"]" * 150_000 + b"a" * 149_999 + b"."
    path = write_model(tmp_path, {"learning_rate": {":serialized:": "not base64!"}}, [pth(deep, "policy.optimizer.pth")])
    run = run_envdoctor("inspect", str(path), "--json", "-")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run
    [finding] = [f for f in run.json()["findings"] if f["id"] == "sb3.dangerous-pickle"]
    assert "could not be judged" in finding["evidence"]["members"]["policy.optimizer.pth"][0]
    refused = run_envdoctor("sanitize", str(path), "-o", str(tmp_path / "out.zip"))
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1 and "member policy.optimizer.pth" in refused.stderr


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.1])
def test_a_learning_rate_sb3_cannot_train_with_is_a_finding(tmp_path, value):
    path = write_model(tmp_path, {"gamma": 0.99, "learning_rate": value})
    run = run_envdoctor("inspect", str(path), "--json", "-")
    assert run.returncode == 1, run
    [finding] = [f for f in run.json()["findings"] if f["id"] == "sb3.unusable-number"]
    assert f"learning_rate = {value!r}" in finding["title"] and "envdoctor sanitize" in json.dumps(finding["remedies"])


# ---------------------------------------------------------------- the real SB3 models


@pytest.mark.slow
def test_every_sanitised_copy_of_the_real_models_holds_only_the_sanitisers_pickles(models, tmp_path):
    copied = 0
    for name, path in sorted(models.items()):
        out = tmp_path / f"{name}.zip"
        run = run_envdoctor("sanitize", str(path), "-o", str(out))
        assert run.returncode in (0, 2), run
        if run.returncode == 0:
            assert_sanitised_copy(out)
            copied += 1
    assert copied >= 7

"""Judging a model's `.pth` members as `torch.load(weights_only=True)` would, without torch.

SB3 keeps its weights and optimizer state in `policy.pth`, `policy.optimizer.pth` and
`pytorch_variables.pth`, each a torch zip whose `data.pkl` torch unpickles; since torch 2.6 `torch.load`
does so with its `weights_only` unpickler by default, which admits a fixed list of globals and opcodes
(docs/knowledge/sb3-model-files.md §7). A member is *data only* when every opcode, global, call, BUILD,
appended item and persistent id of its pickles is one that unpickler admits; anything it would refuse
is dangerous, since an older torch, or a caller passing weights_only=False, would run it. The lists
come from torch's own module (weights_only.json, written by scripts/torch-weights-only). Everything in
the member is untrusted and bounded like the model itself.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, BinaryIO, FrozenSet, Iterable, List, Set, Tuple

from envdoctor import package_data
from envdoctor.sb3 import pickle_vm
from envdoctor.sb3.archive import PICKLE_LIMIT, ModelArchive, ModelFileError, check_directory
from envdoctor.sb3.pickle_vm import Call, Dict_, Global, Persistent, Set_, Trace, callee

# A compressed member is inflated into memory to reach the inner zip's directory; SB3 stores them.
COMPRESSED_LIMIT = 64 * 2 ** 20
UNREADABLE = (
    zipfile.BadZipFile, pickle_vm.CorruptPickle, ModelFileError, OSError, EOFError, ValueError,
    RuntimeError, NotImplementedError, zlib.error,  # encrypted, unknown compression, damaged deflate data
)
ZIP_MAGIC = b"PK\x03\x04"  # torch.serialization._is_zipfile: other first bytes make torch.load read a legacy pickle
# torch/_utils.py IMPORT_MAPPING and NAME_MAPPING: Python 2 names it reads as their Python 3 ones.
PYTHON2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


@dataclass(frozen=True)
class Rules:
    """What torch's weights_only unpickler admits (weights_only.json)."""

    torch: str
    globals: FrozenSet[str]
    blocked_modules: FrozenSet[str]
    opcodes: FrozenSet[str]
    buildable: FrozenSet[str]
    set_item_targets: FrozenSet[str]


@lru_cache(maxsize=1)
def rules() -> Rules:
    data = json.loads(package_data.read_text(__package__, "weights_only.json"))
    return Rules(data["torch"], frozenset(data["globals"]), frozenset(data["blocked_modules"]), frozenset(data["opcodes"]),
                 frozenset(data["buildable"]), frozenset(data["set_item_targets"]))


def is_pth(name: str) -> bool:
    return name.endswith(".pth")


def inner_pickles(model: ModelArchive, name: str) -> List[Tuple[str, bytes]]:
    """(name, bytes) of every pickle in the torch zip held by member `name`; raises one of UNREADABLE.

    Only a zip that torch also reads as one, with one member per name, is opened: zipfile finds a zip by its
    end record, torch by its first bytes, and two readers must not be shown two different data.pkl."""
    with model.open_stream(name, COMPRESSED_LIMIT) as stream:
        return zip_pickles(stream, f"{model.path}: {name}")


def zip_pickles(stream: BinaryIO, where: str) -> List[Tuple[str, bytes]]:
    """(name, bytes) of every pickle in the torch zip `stream` (a member, or a .pt/.pth file itself);
    raises one of UNREADABLE."""
    if stream.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
        raise zipfile.BadZipFile("torch reads it as a legacy pickle")
    stream.seek(0)
    check_directory(stream, where)
    with zipfile.ZipFile(stream) as inner:
        found = []
        names = [info.filename for info in inner.infolist()]
        if len(set(names)) != len(names):
            raise ModelFileError("its zip names a member twice (each reader may take another one)")
        for info in inner.infolist():
            if not info.filename.endswith(".pkl"):
                continue
            if info.file_size > PICKLE_LIMIT:
                raise ModelFileError(f"{info.filename} declares {info.file_size} bytes (more than the {PICKLE_LIMIT} read)")
            with inner.open(info) as pkl:
                data = pkl.read(PICKLE_LIMIT + 1)
            if len(data) > PICKLE_LIMIT:
                raise ModelFileError(f"{info.filename} is larger than the {PICKLE_LIMIT} bytes read")
            found.append((info.filename, data))
        return found


def member_reasons(model: ModelArchive, name: str) -> List[str]:
    """Why torch.load(weights_only=True) would refuse member `name` (empty: it is data only)."""
    try:
        pickles = inner_pickles(model, name)
    except zipfile.BadZipFile:
        return ["is not the zip archive torch.save writes (a legacy pickle file is not judged)"]
    except UNREADABLE as error:
        return [f"could not be judged: {error}"]
    if not pickles:
        return ["holds no data.pkl: not a torch zip archive"]
    found: List[str] = []
    for inner, data in pickles:
        try:
            trace = pickle_vm.run(data, pickle_vm.Budget())
        except pickle_vm.CorruptPickle as error:
            found.append(f"{inner} is not a loadable pickle ({error})")
            continue
        except pickle_vm.TooLarge as error:
            found.append(f"{inner} could not be judged: {error}, more than a state dict holds")
            continue
        found.extend(f"{inner} {reason}" for reason in trace_reasons(trace, rules()))
    return list(dict.fromkeys(found))


def name_of(node: Global) -> str:
    return f"{PYTHON2_MODULES.get(node.module, node.module)}.{node.name}"


def trace_reasons(trace: Trace, allowed: Rules) -> Iterable[str]:
    """The weights_only unpickler's refusals, in the order of its own checks (torch/_weights_only_unpickler.py, Unpickler.load)."""
    for opcode in sorted(trace.opnames - allowed.opcodes):
        yield f"uses the opcode {opcode}, which the weights_only unpickler refuses"
    for node in trace.globals:
        if node.module in allowed.blocked_modules:
            yield f"names {node.dotted}, from a module torch blocks"
        elif name_of(node) not in allowed.globals:
            yield f"names {node.dotted}, which torch.load(weights_only=True) refuses"
    for call in trace.calls:
        target = callee(call)
        if target is None:
            yield "calls something it computed while loading"
        elif call.items and name_of(target) not in allowed.set_item_targets:
            yield f"adds items to what {target.dotted} returns"
    for target, _ in trace.builds:
        if not isinstance(target, Call) or callee(target) is None:
            yield f"sets the state of a {type(target).__name__} while loading"
    yield from persistent_reasons(trace, allowed)


def persistent_reasons(trace: Trace, allowed: Rules) -> Iterable[str]:
    """torch's persistent_load takes ("storage", storage type, key, location, numel) and nothing else."""
    seen: Set[int] = set()
    pending: List[Any] = [trace.root, *trace.calls]
    while pending:
        node = pending.pop()
        if isinstance(node, (Call, list, tuple, Set_, Dict_)):
            if id(node) in seen:
                continue
            seen.add(id(node))
        if isinstance(node, Persistent) and not storage_id(node.pid, allowed):
            yield "holds a persistent id that is not a tensor storage's"
        if isinstance(node, Call):
            pending.extend(node.args if isinstance(node.args, tuple) else (node.args,))
            pending.extend(node.state)
            pending.extend(node.items)
        elif isinstance(node, (list, tuple)):
            pending.extend(node)
        elif isinstance(node, Set_):
            pending.extend(node.items)
        elif isinstance(node, Dict_):
            pending.extend(value for pair in node.pairs for value in pair)


def storage_id(pid: Any, allowed: Rules) -> bool:
    if not (isinstance(pid, tuple) and len(pid) == 5):
        return False
    kind, storage, key, location, numel = pid
    return (kind in ("storage", b"storage") and isinstance(storage, Global) and name_of(storage) in allowed.globals
            and isinstance(key, str) and isinstance(location, str) and isinstance(numel, int) and not isinstance(numel, bool))

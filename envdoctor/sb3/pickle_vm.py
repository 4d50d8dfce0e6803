"""A symbolic pickle machine: what loading a pickle WOULD do, without importing or calling anything.

It walks the opcodes with `pickletools.genops` and builds plain nodes instead of objects: a global
becomes `Global(module, name)`, a call (REDUCE, NEWOBJ, OBJ, INST) becomes a `Call` that records its
callable and arguments, BUILD appends to the call's `state`. Every global and every call is also
recorded in order, so the cloudpickle reader can find code objects and closure cells without walking
the tree. Nothing here ever resolves a name: a malicious pickle is only data.
"""

from __future__ import annotations

import io
import pickletools
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple


class CorruptPickle(Exception):
    """The bytes are not a pickle a Python unpickler could load (truncated, unknown opcode, bad stack)."""


class TooLarge(Exception):
    """The pickle has more opcodes than the budget allows: it cannot be judged in bounded time."""


class Budget:
    """Opcodes left to trace for one model, shared by its entries, so a hostile file costs bounded time.

    Genuine SB3 entries hold at most a few thousand opcodes (arrays travel as one bytes opcode).
    """

    def __init__(self, opcodes: int = 100_000):
        self.left = opcodes


@dataclass(frozen=True)
class Global:
    """A module attribute the pickle imports (GLOBAL, STACK_GLOBAL, INST)."""

    module: str
    name: str

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False)
class Call:
    """`func(*args)` as loading would perform it; `state` holds BUILD states, `items` appended content."""

    func: Any
    args: Any
    kind: str
    state: List[Any] = field(default_factory=list)
    items: List[Any] = field(default_factory=list)


@dataclass(eq=False)
class Dict_:
    """A pickled dict: keys may be unhashable nodes, so it keeps pairs in order, and string keys indexed
    (the last value wins, as in a real dict) so a lookup costs the same however large the dict is."""

    pairs: List[Tuple[Any, Any]] = field(default_factory=list)
    by_name: Dict[str, Any] = field(default_factory=dict, repr=False)

    def add(self, pairs: List[Tuple[Any, Any]]) -> None:
        self.pairs.extend(pairs)
        self.by_name.update((k, v) for k, v in pairs if isinstance(k, str))

    def get(self, key: str, default: Any = None) -> Any:
        return self.by_name.get(key, default)


@dataclass(eq=False)
class Set_:
    items: List[Any] = field(default_factory=list)
    frozen: bool = False


@dataclass(frozen=True)
class Persistent:
    """A persistent id (torch uses them for tensor storages)."""

    pid: Any


class ByteArray(bytes):
    """The bytes of a BYTEARRAY8 opcode: loading makes a (writable) bytearray of them, which a rewritten
    pickle must make again (NumPy's protocol-5 arrays are writable only over a bytearray)."""


@dataclass(frozen=True)
class OutOfBand:
    """A protocol-5 out-of-band buffer; its bytes are not in the pickle."""


@dataclass
class Trace:
    """What loading would do: the result, every global imported and every call made, in order."""

    root: Any
    globals: List[Global]
    calls: List[Call]
    builds: List[Tuple[Any, Any]]
    protocol: int
    opcodes: int
    opnames: FrozenSet[str] = frozenset()


CONSTANT_OPS = {
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
    "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
}
SINGLETONS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
EMPTY = {"EMPTY_LIST": list, "EMPTY_TUPLE": tuple, "EMPTY_DICT": Dict_, "EMPTY_SET": Set_}


class _Machine:
    def __init__(self) -> None:
        self.stack: List[Any] = []
        self.metastack: List[List[Any]] = []
        self.memo: Dict[int, Any] = {}
        self.globals: List[Global] = []
        self.calls: List[Call] = []
        self.builds: List[Tuple[Any, Any]] = []
        self.protocol = 0
        self.root: Any = None

    def pop_mark(self) -> List[Any]:
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def add_global(self, module: Any, name: Any) -> None:
        if not isinstance(module, str) or not isinstance(name, str):
            raise CorruptPickle("a global whose module or name is not a string")
        node = Global(module, name)
        self.globals.append(node)
        self.stack.append(node)

    def call(self, func: Any, args: Any, kind: str) -> None:
        node = Call(func, args, kind)
        self.calls.append(node)
        self.stack.append(node)

    def extend(self, target: Any, items: List[Any]) -> None:
        if isinstance(target, list):
            target.extend(items)
        elif isinstance(target, Call):
            target.items.extend(items)
        elif isinstance(target, Set_):
            target.items.extend(items)
        else:
            raise CorruptPickle(f"appending to a {type(target).__name__}")

    def set_items(self, target: Any, flat: List[Any]) -> None:
        if len(flat) % 2:
            raise CorruptPickle("an odd number of items for a dict")
        pairs = list(zip(flat[::2], flat[1::2]))
        if isinstance(target, Dict_):
            target.add(pairs)
        elif isinstance(target, Call):
            target.items.extend(pairs)
        else:
            raise CorruptPickle(f"setting items on a {type(target).__name__}")

    def step(self, name: str, arg: Any) -> None:
        handler = HANDLERS.get(name)
        if handler is None:
            raise CorruptPickle(f"unsupported opcode {name}")
        handler(self, name, arg)

    # One handler per opcode family, each called as handler(machine, opcode name, argument).

    def op_constant(self, name: str, arg: Any) -> None:
        self.stack.append(ByteArray(arg) if name == "BYTEARRAY8" else arg)

    def op_singleton(self, name: str, arg: Any) -> None:
        self.stack.append(SINGLETONS[name])

    def op_empty(self, name: str, arg: Any) -> None:
        self.stack.append(EMPTY[name]())

    def op_proto(self, name: str, arg: Any) -> None:
        self.protocol = arg

    def op_skip(self, name: str, arg: Any) -> None:
        """Framing and buffer flags change nothing a loader builds."""

    def op_stop(self, name: str, arg: Any) -> None:
        self.root = self.stack.pop()

    def op_mark(self, name: str, arg: Any) -> None:
        self.metastack.append(self.stack)
        self.stack = []

    def op_pop(self, name: str, arg: Any) -> None:
        if self.stack:
            self.stack.pop()
        else:
            self.pop_mark()

    def op_pop_mark(self, name: str, arg: Any) -> None:
        self.pop_mark()

    def op_dup(self, name: str, arg: Any) -> None:
        self.stack.append(self.stack[-1])

    def op_put(self, name: str, arg: Any) -> None:
        self.memo[arg] = self.stack[-1]

    def op_memoize(self, name: str, arg: Any) -> None:
        self.memo[len(self.memo)] = self.stack[-1]

    def op_get(self, name: str, arg: Any) -> None:
        if arg not in self.memo:
            raise CorruptPickle(f"memo entry {arg} read before it was written")
        self.stack.append(self.memo[arg])

    def op_list(self, name: str, arg: Any) -> None:
        items = self.pop_mark()  # pop first: `self.stack` is another list afterwards
        self.stack.append(list(items))

    def op_tuple(self, name: str, arg: Any) -> None:
        items = self.pop_mark()
        self.stack.append(tuple(items))

    def op_tuple_n(self, name: str, arg: Any) -> None:
        n = int(name[-1])
        items = tuple(self.stack[-n:])
        if len(items) != n:
            raise CorruptPickle(f"{name} with fewer than {n} items")
        del self.stack[-n:]
        self.stack.append(items)

    def op_dict(self, name: str, arg: Any) -> None:
        items = self.pop_mark()
        node = Dict_()
        self.set_items(node, items)
        self.stack.append(node)

    def op_frozenset(self, name: str, arg: Any) -> None:
        items = self.pop_mark()
        self.stack.append(Set_(items, frozen=True))

    def op_append(self, name: str, arg: Any) -> None:
        value = self.stack.pop()
        self.extend(self.stack[-1], [value])

    def op_appends(self, name: str, arg: Any) -> None:
        items = self.pop_mark()
        self.extend(self.stack[-1], items)

    def op_setitem(self, name: str, arg: Any) -> None:
        value, key = self.stack.pop(), self.stack.pop()
        self.set_items(self.stack[-1], [key, value])

    def op_setitems(self, name: str, arg: Any) -> None:
        items = self.pop_mark()
        self.set_items(self.stack[-1], items)

    def op_global(self, name: str, arg: Any) -> None:
        module, _, attribute = arg.partition(" ")
        self.add_global(module, attribute)

    def op_inst(self, name: str, arg: Any) -> None:
        module, _, attribute = arg.partition(" ")
        args = tuple(self.pop_mark())
        self.add_global(module, attribute)
        self.call(self.stack.pop(), args, "inst")

    def op_stack_global(self, name: str, arg: Any) -> None:
        attribute, module = self.stack.pop(), self.stack.pop()
        self.add_global(module, attribute)

    def op_reduce(self, name: str, arg: Any) -> None:
        args, func = self.stack.pop(), self.stack.pop()
        self.call(func, args, "reduce")

    def op_newobj(self, name: str, arg: Any) -> None:
        args, cls = self.stack.pop(), self.stack.pop()
        self.call(cls, args, "newobj")

    def op_newobj_ex(self, name: str, arg: Any) -> None:
        kwargs, args, cls = self.stack.pop(), self.stack.pop(), self.stack.pop()
        self.call(cls, (args, kwargs), "newobj_ex")

    def op_obj(self, name: str, arg: Any) -> None:
        items = self.pop_mark()
        if not items:
            raise CorruptPickle("OBJ without a class")
        self.call(items[0], tuple(items[1:]), "obj")

    def op_build(self, name: str, arg: Any) -> None:
        state = self.stack.pop()
        target = self.stack[-1]
        self.builds.append((target, state))
        if isinstance(target, Call):
            target.state.append(state)

    def op_persid(self, name: str, arg: Any) -> None:
        self.stack.append(Persistent(arg))

    def op_binpersid(self, name: str, arg: Any) -> None:
        self.stack.append(Persistent(self.stack.pop()))

    def op_next_buffer(self, name: str, arg: Any) -> None:
        self.stack.append(OutOfBand())

    def op_extension(self, name: str, arg: Any) -> None:
        raise CorruptPickle(f"copyreg extension code {arg}: unresolvable outside the producing process")


Handler = Callable[[_Machine, str, Any], None]
HANDLERS: Dict[str, Handler] = {
    **dict.fromkeys(CONSTANT_OPS, _Machine.op_constant),
    **dict.fromkeys(SINGLETONS, _Machine.op_singleton),
    **dict.fromkeys(EMPTY, _Machine.op_empty),
    "PROTO": _Machine.op_proto,
    "FRAME": _Machine.op_skip,
    "READONLY_BUFFER": _Machine.op_skip,
    "STOP": _Machine.op_stop,
    "MARK": _Machine.op_mark,
    "POP": _Machine.op_pop,
    "POP_MARK": _Machine.op_pop_mark,
    "DUP": _Machine.op_dup,
    **dict.fromkeys(("PUT", "BINPUT", "LONG_BINPUT"), _Machine.op_put),
    "MEMOIZE": _Machine.op_memoize,
    **dict.fromkeys(("GET", "BINGET", "LONG_BINGET"), _Machine.op_get),
    "LIST": _Machine.op_list,
    "TUPLE": _Machine.op_tuple,
    **dict.fromkeys(("TUPLE1", "TUPLE2", "TUPLE3"), _Machine.op_tuple_n),
    "DICT": _Machine.op_dict,
    "FROZENSET": _Machine.op_frozenset,
    "APPEND": _Machine.op_append,
    **dict.fromkeys(("APPENDS", "ADDITEMS"), _Machine.op_appends),
    "SETITEM": _Machine.op_setitem,
    "SETITEMS": _Machine.op_setitems,
    "GLOBAL": _Machine.op_global,
    "INST": _Machine.op_inst,
    "STACK_GLOBAL": _Machine.op_stack_global,
    "REDUCE": _Machine.op_reduce,
    "NEWOBJ": _Machine.op_newobj,
    "NEWOBJ_EX": _Machine.op_newobj_ex,
    "OBJ": _Machine.op_obj,
    "BUILD": _Machine.op_build,
    "PERSID": _Machine.op_persid,
    "BINPERSID": _Machine.op_binpersid,
    "NEXT_BUFFER": _Machine.op_next_buffer,
    **dict.fromkeys(("EXT1", "EXT2", "EXT4"), _Machine.op_extension),
}


def run(data: bytes, budget: Optional[Budget] = None) -> Trace:
    """Trace the pickle `data`; raises CorruptPickle when a real unpickler would fail on its structure, and
    TooLarge when it holds more opcodes than `budget` has left."""
    if not data:
        raise CorruptPickle("empty pickle")
    return trace(io.BytesIO(data), budget or Budget())


def run_sequence(data: bytes, count: int, budget: Budget) -> Iterator[Trace]:
    """The first `count` pickles written one after another into `data` (torch's legacy save format), each
    traced as it is reached, so those before a broken one are still seen."""
    stream = io.BytesIO(data)
    for _ in range(count):
        yield trace(stream, budget)


def trace(stream: BinaryIO, budget: Budget) -> Trace:
    """Trace one pickle from `stream`, which is left just after its STOP."""
    machine = _Machine()
    count = 0
    names = set()
    try:  # genops itself raises on unknown opcodes, short arguments and a missing STOP
        for opcode, arg, _ in pickletools.genops(stream):
            count += 1
            if count > budget.left:
                budget.left = 0
                raise TooLarge(f"more than {count - 1} opcodes")
            names.add(opcode.name)
            machine.step(opcode.name, arg)
    except (ValueError, IndexError, TypeError, AttributeError, OverflowError) as error:
        raise CorruptPickle(f"{type(error).__name__}: {error}") from None
    budget.left -= count
    return Trace(machine.root, machine.globals, machine.calls, machine.builds, machine.protocol, count, frozenset(names))


def callee(node: Any) -> Optional[Global]:
    """The global a call invokes, when it is a plain global."""
    return node.func if isinstance(node, Call) and isinstance(node.func, Global) else None

"""Writing a pickle of our own from a traced data-only value: the sanitiser's only way to make a pickle.

The input's pickle bytes are never copied: the traced value (numbers, strings, bytes, containers, and
calls of data_only.py's constructors with their states) is written again opcode by opcode, in the form
pickle itself writes such values (protocol 4; 5 only where a value was a bytearray, as NumPy's writable
protocol-5 arrays are), with names in their Python 3 spelling. Only what the result reaches is written,
so calls a pickle made and then dropped vanish. A value the proof does not admit is refused here too, so
nothing outside the list can be written even by mistake.
"""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any, Dict, Set

from envdoctor.sb3 import data_only
from envdoctor.sb3.pickle_vm import ByteArray, Call, Dict_, Global, Set_, callee

# pickle's own opcodes (Lib/pickle.py): the writer names nothing pickle does not define.
OP = pickle
MAX_DEPTH = 4 * data_only.MAX_DEPTH  # frames per level of nesting: a value, a tuple of arguments, a call


class NotWritable(Exception):
    """The value holds something the sanitiser does not write (outside the data-only list, or a cycle
    through a tuple)."""


class Writer:
    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.memo: Dict[int, int] = {}
        self.globals: Dict[str, int] = {}
        self.open: Set[int] = set()
        self.depth = 0

    def emit(self, *parts: bytes) -> None:
        for part in parts:
            self.out.write(part)

    def memoize(self, node: Any) -> None:
        self.memo[id(node)] = len(self.memo)
        self.emit(OP.MEMOIZE)

    def get(self, index: int) -> None:
        self.emit(OP.BINGET + bytes([index]) if index < 256 else OP.LONG_BINGET + struct.pack("<I", index))

    def value(self, node: Any) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise NotWritable(f"a value nested deeper than {data_only.MAX_DEPTH} levels")
        try:
            self.node(node)
        finally:
            self.depth -= 1

    def node(self, node: Any) -> None:
        if id(node) in self.memo and isinstance(node, (Call, list, tuple, Set_, Dict_)):
            self.get(self.memo[id(node)])
        elif id(node) in self.open:
            raise NotWritable("a value that holds itself before it is made")
        elif node is None or isinstance(node, bool):
            self.emit({None: OP.NONE, True: OP.NEWTRUE, False: OP.NEWFALSE}[node])
        elif isinstance(node, int):
            self.integer(node)
        elif isinstance(node, float):
            self.emit(OP.BINFLOAT + struct.pack(">d", node))
        elif isinstance(node, str):
            raw = node.encode("utf-8", "surrogatepass")
            self.emit(OP.BINUNICODE + struct.pack("<I", len(raw)) + raw if len(raw) < 2 ** 32 else OP.BINUNICODE8 + struct.pack("<Q", len(raw)) + raw)
        elif isinstance(node, ByteArray):
            self.emit(OP.BYTEARRAY8 + struct.pack("<Q", len(node)), node)
        elif isinstance(node, bytes):
            self.emit(OP.BINBYTES + struct.pack("<I", len(node)) if len(node) < 2 ** 32 else OP.BINBYTES8 + struct.pack("<Q", len(node)), node)
        elif isinstance(node, tuple):
            self.tuple(node)
        elif isinstance(node, list):
            self.emit(OP.EMPTY_LIST)
            self.memoize(node)
            self.batch(node, OP.APPENDS)
        elif isinstance(node, Dict_):
            self.emit(OP.EMPTY_DICT)
            self.memoize(node)
            self.batch([part for pair in node.pairs for part in pair], OP.SETITEMS)
        elif isinstance(node, Set_):
            self.set(node)
        elif isinstance(node, Global):
            self.global_(node)
        elif isinstance(node, Call):
            self.call(node)
        else:
            raise NotWritable(f"a {type(node).__name__}")

    def integer(self, number: int) -> None:
        if 0 <= number < 256:
            self.emit(OP.BININT1 + bytes([number]))
        elif 0 <= number < 65536:
            self.emit(OP.BININT2 + struct.pack("<H", number))
        elif -2 ** 31 <= number < 2 ** 31:
            self.emit(OP.BININT + struct.pack("<i", number))
        else:
            raw = pickle.encode_long(number)
            self.emit(OP.LONG1 + bytes([len(raw)]) + raw if len(raw) < 256 else OP.LONG4 + struct.pack("<i", len(raw)) + raw)

    def tuple(self, node: tuple) -> None:
        if not node:
            self.emit(OP.EMPTY_TUPLE)
            return
        self.open.add(id(node))
        self.emit(OP.MARK)
        for item in node:
            self.value(item)
        self.open.discard(id(node))
        self.emit(OP.TUPLE)
        self.memoize(node)

    def set(self, node: Set_) -> None:
        if node.frozen:
            self.open.add(id(node))
            self.emit(OP.MARK)
            for item in node.items:
                self.value(item)
            self.open.discard(id(node))
            self.emit(OP.FROZENSET)
            self.memoize(node)
        else:
            self.emit(OP.EMPTY_SET)
            self.memoize(node)
            self.batch(node.items, OP.ADDITEMS)

    def batch(self, items: list, opcode: bytes) -> None:
        if items:
            self.emit(OP.MARK)
            for item in items:
                self.value(item)
            self.emit(opcode)

    def global_(self, node: Global) -> None:
        if not data_only.admitted_global(node):
            raise NotWritable(f"the name {node.dotted}")
        name = data_only.dotted(node)
        if name in self.globals:
            self.get(self.globals[name])
            return
        module, _, attribute = name.rpartition(".")
        for text in (module, attribute):
            self.value(text)
        self.emit(OP.STACK_GLOBAL)
        self.globals[name] = len(self.memo)
        self.memo[id(node)] = len(self.memo)
        self.emit(OP.MEMOIZE)

    def call(self, node: Call) -> None:
        reason = data_only.call_reason(node)
        if reason:
            raise NotWritable(reason)
        self.global_(callee(node))
        self.open.add(id(node))
        self.value(node.args)
        self.open.discard(id(node))
        self.emit(OP.NEWOBJ if node.kind == "newobj" else OP.REDUCE)
        self.memoize(node)
        if node.items:
            pairs = data_only.maker(node) == "collections.OrderedDict"
            self.batch([part for item in node.items for part in (item if pairs else (item,))], OP.SETITEMS if pairs else OP.APPENDS)
        for state in node.state:
            reason = data_only.build_reason(node, state)
            if reason:
                raise NotWritable(reason)
            self.value(state)
            self.emit(OP.BUILD)


def has_bytearray(node: Any, seen: Set[int]) -> bool:
    """Whether a bytearray is reachable (protocol 5 is needed to write one)."""
    pending = [node]
    while pending:
        node = pending.pop()
        if isinstance(node, ByteArray):
            return True
        if isinstance(node, (Call, list, tuple, Set_, Dict_)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            pending.extend(data_only.children(node))
    return False


def write(root: Any) -> bytes:
    """A fresh pickle of `root`, a traced value; raises NotWritable for anything outside the data-only list."""
    writer = Writer()
    protocol = 5 if has_bytearray(root, set()) else 4
    writer.emit(OP.PROTO + bytes([protocol]))
    writer.value(root)
    writer.emit(OP.STOP)
    return writer.out.getvalue()

"""The symbolic pickle machine against the real unpickler: every opcode family of protocols 0-5 on benign data.

Each value is pickled by the real `pickle` in every protocol; the traced nodes, turned back into plain
values, must equal what `pickle.loads` returns. A test also names every opcode pickletools knows, so a
new protocol's opcode cannot go unhandled unnoticed.
"""

from __future__ import annotations

import pickle
import pickletools

import pytest

from envdoctor.sb3 import pickle_vm

VALUES = {
    "none-bools": [None, True, False],
    "ints": [0, 1, -1, 255, 256, 65535, 65536, -2 ** 31, 2 ** 31, 2 ** 63, -(2 ** 100), 10 ** 400],
    "floats": [0.0, -1.5, 3e-4, 1e300],
    "strings": ["", "a", "ü€", "x" * 300, "line\nbreak\\"],
    "bytes": [b"", b"\x00\xff", b"y" * 300],
    "bytearray": bytearray(b"abc"),
    "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), ((),)],
    "lists": [[], [1], [1, [2, [3]]], list(range(1500))],
    "dicts": [{}, {"a": 1}, {i: str(i) for i in range(1500)}, {(1, 2): [3]}],
    "sets": [set(), {1, 2}, set(range(1500))],
    "frozensets": [frozenset(), frozenset({1, 2}), frozenset(range(1500))],
    "nesting": {"a": [{"b": (1, frozenset({2}))}, {3, 4}], "c": ([], {})},
}


def shared_and_recursive():
    inner = [1, 2]
    outer = [inner, inner, {"again": inner}]
    return outer


def plain(node, seen=None):
    """The traced node as a plain Python value (only for pure data: no globals, no calls)."""
    seen = {} if seen is None else seen
    if id(node) in seen:
        return seen[id(node)]
    if isinstance(node, list):
        result = []
        seen[id(node)] = result
        result.extend(plain(item, seen) for item in node)
        return result
    if isinstance(node, tuple):
        return tuple(plain(item, seen) for item in node)
    if isinstance(node, pickle_vm.Dict_):
        result = {}
        seen[id(node)] = result
        for key, value in node.pairs:
            result[plain(key, seen)] = plain(value, seen)
        return result
    if isinstance(node, pickle_vm.Set_):
        items = [plain(item, seen) for item in node.items]
        return frozenset(items) if node.frozen else set(items)
    if isinstance(node, pickle_vm.Call):
        callee = pickle_vm.callee(node)
        assert callee is not None, node
        args = plain(node.args, seen)
        builders = {"builtins.set": set, "__builtin__.set": set, "builtins.frozenset": frozenset,
                    "__builtin__.frozenset": frozenset, "builtins.bytearray": bytearray,
                    "__builtin__.bytearray": bytearray, "__builtin__.bytes": bytes, "builtins.bytes": bytes, "_codecs.encode": lambda text, enc: text.encode(enc)}
        return builders[callee.dotted](*args)
    return node


CASES = [(f"{name}-p{protocol}", value, protocol) for name, value in [*VALUES.items(), ("shared", shared_and_recursive())]
         for protocol in range(pickle.HIGHEST_PROTOCOL + 1)]


@pytest.mark.parametrize("case, value, protocol", CASES, ids=[c for c, _, _ in CASES])
def test_trace_equals_what_pickle_loads(case, value, protocol):
    data = pickle.dumps(value, protocol=protocol)
    expected = pickle.loads(data)
    traced = plain(pickle_vm.run(data).root)
    if isinstance(expected, bytearray):
        traced = bytearray(traced)
    assert traced == expected


def test_shared_references_stay_shared():
    root = pickle_vm.run(pickle.dumps(shared_and_recursive(), protocol=4)).root
    assert root[0] is root[1] is root[2].get("again")


@pytest.mark.parametrize("text", [
    b"(l0N.",                # protocol-0 list, popped
    b"(lp0\nI1\naI2\na.",    # protocol-0 list with APPEND
    b"(I1\nI2\nl.",          # LIST of marked items
    b"(dp0\nVa\nI1\ns.",     # protocol-0 dict
    b"(I1\nI2\ntp0\n0g0\n.",  # PUT, POP, GET
])
def test_hand_written_protocol_0_matches_pickle(text):
    assert plain(pickle_vm.run(text).root) == pickle.loads(text)


def test_a_list_prefix_cannot_turn_a_payload_into_a_corrupt_entry():
    trace = pickle_vm.run(b"(l0cposix\nsystem\n(Vtrue\ntR.")
    assert [g.dotted for g in trace.globals] == ["posix.system"] and len(trace.calls) == 1


def test_every_opcode_pickletools_knows_is_handled_or_refused_by_name():
    handled = set()
    machine = pickle_vm._Machine()
    for opcode in pickletools.opcodes:
        try:
            machine.step(opcode.name, None)
        except pickle_vm.CorruptPickle as error:
            if "unsupported opcode" in str(error):
                continue
        except Exception:  # noqa: BLE001 - a handled opcode may fail on a fake argument and an empty stack
            pass
        handled.add(opcode.name)
    assert handled == {op.name for op in pickletools.opcodes}


def test_the_opcode_table_has_a_handler_for_every_opcode_and_refuses_the_rest_by_name():
    assert set(pickle_vm.HANDLERS) == {op.name for op in pickletools.opcodes}
    with pytest.raises(pickle_vm.CorruptPickle, match=r"^unsupported opcode NO_SUCH_OPCODE$"):
        pickle_vm._Machine().step("NO_SUCH_OPCODE", None)
    with pytest.raises(pickle_vm.CorruptPickle, match=r"^copyreg extension code 7: unresolvable"):
        pickle_vm.run(b"\x80\x02\x82\x07.")  # EXT1 7
    with pytest.raises(pickle_vm.CorruptPickle, match=r"^ValueError: .*opcode b'\\xff' unknown"):
        pickle_vm.run(b"\x80\x04\xff.")


def test_an_opcode_budget_bounds_the_work():
    data = b"\x80\x04" + b"N0" * 10_000 + b"N."
    budget = pickle_vm.Budget(5_000)
    with pytest.raises(pickle_vm.TooLarge):
        pickle_vm.run(data, budget)
    assert budget.left == 0
    with pytest.raises(pickle_vm.TooLarge):
        pickle_vm.run(b"\x80\x04N.", budget)  # a spent budget refuses the next entry too

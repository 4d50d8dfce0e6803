"""Proving that a traced pickle builds nothing but data: the one definition of a *safe* entry.

Reading code cannot prove it harmless (a judge that must admit real schedules and refuse hostile ones by
their bytecode is an arms race the reader loses), so *safe* is defined the other way round: a pickle is
data only when every call it makes while loading is one of the short, closed list of constructors below,
with the types of its arguments checked, and every name it holds is a class SB3 is known to keep there
(a policy, a buffer, an activation, an optimizer: named, never called while loading). No function, no code
object, no callable wrapper, no `_load_from_bytes`, no persistent id, nothing reached by attribute. The
sanitiser writes its pickles from this same list (sanitize.py), so what it writes passes this proof by
construction, and the property test checks exactly that.

The constructors and what they take are the forms cloudpickle writes for SB3's values (tests/data/sb3/
observed_globals.json): builtins containers and scalars, NumPy's array, dtype, scalar and random-generator
reconstructors, gymnasium/gym spaces, SB3's schedule and action-noise objects and TrainFreq, and
`collections.OrderedDict`/`deque`. Tensors are not data here: SB3 keeps them in the `.pth` members, judged
by weights_only.py. Linear in the size of the trace.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from envdoctor.sb3.pickle_vm import Call, Dict_, Global, Set_, Trace, callee

MAX_DEPTH = 64  # SB3's values nest a few levels; deeper is not data SB3 wrote
SCALARS = (type(None), bool, int, float, str, bytes)
NUMPY_CORES = ("numpy.core", "numpy._core")
BIT_GENERATORS = frozenset({
    "numpy.random._pcg64.PCG64", "numpy.random._pcg64.PCG64DXSM", "numpy.random._mt19937.MT19937",
    "numpy.random._philox.Philox", "numpy.random._sfc64.SFC64",
})
SEED_SEQUENCES = frozenset({"numpy.random.bit_generator.SeedSequence", "numpy.random._bit_generator.SeedSequence"})
BIT_GENERATOR_CTOR = "numpy.random._pickle.__bit_generator_ctor"
NUMPY_SCALAR_TYPES = frozenset(f"numpy.{t}" for t in (
    "bool_", "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "complex64", "complex128",
))
# Objects made with NEWOBJ and no arguments, then given a state dict by BUILD (how pickle saves a plain class).
SPACES = ("box.Box", "discrete.Discrete", "multi_binary.MultiBinary", "multi_discrete.MultiDiscrete", "dict.Dict", "tuple.Tuple")
STATE_OBJECTS = frozenset(
    [f"{package}.spaces.{space}" for package in ("gymnasium", "gym") for space in SPACES]
    + [f"stable_baselines3.common.utils.{name}" for name in ("ConstantSchedule", "FloatSchedule", "LinearSchedule")]
    + [f"stable_baselines3.common.noise.{name}" for name in ("NormalActionNoise", "OrnsteinUhlenbeckActionNoise", "VectorizedActionNoise")]
)
ENUMS = frozenset({"stable_baselines3.common.type_aliases.TrainFrequencyUnit", "stable_baselines3.her.goal_selection_strategy.GoalSelectionStrategy"})
TRAIN_FREQ = "stable_baselines3.common.type_aliases.TrainFreq"
# Classes SB3 keeps by name (policy_class, policy_kwargs, *_buffer_class): imported, never called while loading.
CLASS_MODULES = re.compile(
    r"^(?:(?:stable_baselines3|sb3_contrib)(?:\.\w+)*\.policies"
    r"|stable_baselines3\.common\.(?:buffers|torch_layers|sb2_compat\.rmsprop_tf_like)"
    r"|sb3_contrib\.common\.(?:torch_layers|maskable\.buffers|recurrent\.buffers)"
    r"|stable_baselines3\.her\.her_replay_buffer"
    r"|torch\.nn\.modules\.activation|torch\.optim\.[a-z_]+)$"
)
CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*$")
DATA_REFERENCES = NUMPY_SCALAR_TYPES | BIT_GENERATORS | SEED_SEQUENCES | {"numpy.ndarray", BIT_GENERATOR_CTOR}


# Protocols 0-2 name builtins and copyreg by their Python 2 names (Lib/_compat_pickle.py).
PYTHON2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


def dotted(node: Any) -> str:
    """The global's name as Python 3 resolves it; "" for anything else."""
    return f"{PYTHON2_MODULES.get(node.module, node.module)}.{node.name}" if isinstance(node, Global) else ""


def maker(node: Any) -> str:
    """The constructor that made `node`, when it is a call of a plain global."""
    return dotted(callee(node))


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_shape(value: Any) -> bool:
    return isinstance(value, tuple) and all(is_int(v) for v in value)


def is_bytes(value: Any) -> bool:
    """Bytes as protocols 3+ write them, or as 0-2 do (`_codecs.encode(text, "latin1")`)."""
    return isinstance(value, bytes) or maker(value) == "_codecs.encode"


def is_dtype(value: Any) -> bool:
    return maker(value) == "numpy.dtype"


def shaped(*tests: Callable[[Any], bool]) -> Callable[[Tuple[Any, ...]], bool]:
    """Arguments of exactly these types, in order."""
    return lambda args: len(args) == len(tests) and all(test(a) for test, a in zip(tests, args))


def one_of(*shapes: Callable[[Tuple[Any, ...]], bool]) -> Callable[[Tuple[Any, ...]], bool]:
    return lambda args: any(shape(args) for shape in shapes)


def equals(*values: Any) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and value in values


def named(names: Iterable[str]) -> Callable[[Any], bool]:
    names = frozenset(names)
    return lambda value: dotted(value) in names


def made_by(name: str) -> Callable[[Any], bool]:
    return lambda value: maker(value) == name


def sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def anything(value: Any) -> bool:
    """Any node: the walk judges it as data in its own right."""
    return True


def is_pair(item: Any) -> bool:
    """An item SETITEMS gave a mapping (the symbolic machine keeps them as (key, value))."""
    return isinstance(item, tuple) and len(item) == 2


NOTHING = shaped()
STR = shaped(lambda v: isinstance(v, str))
GENERATOR_ARGS = one_of(NOTHING, STR, shaped(lambda v: isinstance(v, str), named({BIT_GENERATOR_CTOR})), shaped(made_by(BIT_GENERATOR_CTOR)))


class Constructor:
    """A callable the proof admits: the kinds of call that make it, the arguments it takes, the states BUILD
    may give what it returns and the items APPENDS/SETITEMS may add to it (None: refused)."""

    def __init__(self, args: Callable[[Tuple[Any, ...]], bool], kinds: Tuple[str, ...] = ("reduce",),
                 state: Optional[Callable[[Any], bool]] = None, items: Optional[Callable[[Any], bool]] = None):
        self.args, self.kinds, self.state, self.items = args, kinds, state, items


def state_dict(state: Any) -> bool:
    return isinstance(state, Dict_)


def state_tuple(state: Any) -> bool:
    return isinstance(state, tuple)


def state_dict_or_tuple(state: Any) -> bool:
    return isinstance(state, (Dict_, tuple))


CONSTRUCTORS: Dict[str, Constructor] = {
    "_codecs.encode": Constructor(shaped(lambda v: isinstance(v, str), equals("latin1", "latin-1"))),
    "builtins.set": Constructor(one_of(NOTHING, shaped(sequence))),
    "builtins.frozenset": Constructor(one_of(NOTHING, shaped(sequence))),
    "builtins.bytearray": Constructor(one_of(NOTHING, shaped(lambda v: is_bytes(v) or isinstance(v, list)), shaped(lambda v: isinstance(v, str), equals("latin1", "latin-1")))),
    "builtins.complex": Constructor(shaped(is_number, is_number)),
    "collections.OrderedDict": Constructor(one_of(NOTHING, shaped(lambda v: isinstance(v, list))), state=state_dict, items=is_pair),
    "collections.deque": Constructor(one_of(NOTHING, shaped(sequence), shaped(sequence, lambda v: v is None or is_int(v))), items=anything),
    "numpy.dtype": Constructor(shaped(lambda v: isinstance(v, str), lambda v: isinstance(v, bool), lambda v: isinstance(v, bool)), state=state_tuple),
    **{f"{core}.multiarray._reconstruct": Constructor(shaped(named({"numpy.ndarray"}), is_shape, is_bytes), state=state_tuple) for core in NUMPY_CORES},
    **{f"{core}.multiarray.scalar": Constructor(shaped(is_dtype, is_bytes)) for core in NUMPY_CORES},
    **{f"{core}.numeric._frombuffer": Constructor(shaped(lambda v: isinstance(v, bytes), is_dtype, is_shape, equals("C", "F"))) for core in NUMPY_CORES},
    "numpy.random._pickle.__generator_ctor": Constructor(GENERATOR_ARGS, state=state_dict),
    "numpy.random._pickle.__randomstate_ctor": Constructor(GENERATOR_ARGS, state=state_dict_or_tuple),
    BIT_GENERATOR_CTOR: Constructor(one_of(NOTHING, STR, shaped(named(BIT_GENERATORS))), state=state_dict_or_tuple),
    **{f"{module}.__pyx_unpickle_SeedSequence": Constructor(shaped(named(SEED_SEQUENCES), is_int, lambda v: v is None or isinstance(v, tuple)), state=state_tuple)
       for module in ("numpy.random.bit_generator", "numpy.random._bit_generator")},
    **{name: Constructor(NOTHING, kinds=("newobj",), state=state_dict) for name in STATE_OBJECTS},
    **{name: Constructor(shaped(lambda v: isinstance(v, (str, int)) and not isinstance(v, bool))) for name in ENUMS},
    TRAIN_FREQ: Constructor(shaped(is_int, lambda v: maker(v) in ENUMS), kinds=("newobj", "reduce")),
}


def is_class_reference(node: Global) -> bool:
    """A class SB3 keeps by name in its data: a policy, buffer, features extractor, activation or optimizer."""
    return bool(CLASS_NAME.fullmatch(node.name)) and bool(CLASS_MODULES.fullmatch(node.module))


def admitted_global(node: Global) -> bool:
    """Every global a data-only pickle may name at all (the property test's list)."""
    return dotted(node) in CONSTRUCTORS or dotted(node) in DATA_REFERENCES or is_class_reference(node)


def call_reason(call: Call) -> Optional[str]:
    target = callee(call)
    if target is None:
        return "calls something it computed while loading"
    constructor = CONSTRUCTORS.get(dotted(target))
    if constructor is None:
        return f"calls {target.dotted} while loading, which is not a data constructor"
    if call.kind not in constructor.kinds:
        return f"makes {target.dotted} by {call.kind.upper()}, not as its pickles do"
    if not isinstance(call.args, tuple) or not constructor.args(call.args):
        return f"calls {target.dotted} with arguments its pickles never hold"
    if call.items and not (constructor.items and all(constructor.items(item) for item in call.items)):
        return f"adds items to what {target.dotted} returns that it does not take"
    return None


def build_reason(target: Any, state: Any) -> Optional[str]:
    constructor = CONSTRUCTORS.get(maker(target))
    if constructor is None or constructor.state is None:
        return f"sets the state of {describe(target)} while loading"
    if not constructor.state(state):
        return f"gives {maker(target)} a state of another type than its pickles hold"
    return None


def describe(node: Any) -> str:
    if isinstance(node, Global):
        return node.dotted
    if isinstance(node, Call):
        return f"what {maker(node) or 'a computed call'} returns"
    return type(node).__name__


def value_reason(node: Any) -> Optional[str]:
    """Why `node`, standing as data, is not data (None: it is, as far as this node goes)."""
    if isinstance(node, Global):
        if dotted(node) in DATA_REFERENCES or is_class_reference(node):
            return None
        return f"names {node.dotted}" + (", a constructor, as data" if dotted(node) in CONSTRUCTORS else "")
    if isinstance(node, (Call, list, tuple, Set_, Dict_)) or isinstance(node, SCALARS):
        return None
    return f"holds a {type(node).__name__} (a persistent id or an out-of-band buffer)"


def key_reason(key: Any) -> Optional[str]:
    if isinstance(key, SCALARS) or (isinstance(key, tuple) and all(isinstance(k, SCALARS) for k in key)):
        return None
    return f"keys a dict by {describe(key)}"


def children(node: Any) -> Iterable[Any]:
    if isinstance(node, Call):
        yield from node.args if isinstance(node.args, tuple) else (node.args,)
        yield from node.state
        for item in node.items:
            yield from item if isinstance(item, tuple) and maker(node) == "collections.OrderedDict" else (item,)
    elif isinstance(node, (list, tuple)):
        yield from node
    elif isinstance(node, Set_):
        yield from node.items
    elif isinstance(node, Dict_):
        for key, value in node.pairs:
            yield key
            yield value


def walk(trace: Trace) -> Iterable[str]:
    """Value reasons for every node reachable from the result, then from any call it does not reach, each
    visited once; depth bounded along the result's own nesting."""
    seen: Set[int] = set()
    pending: List[Tuple[Any, int]] = [(trace.root, 0)]
    unreached = list(trace.calls)
    while pending or unreached:
        node, depth = pending.pop() if pending else (unreached.pop(), 1)
        if isinstance(node, (Call, list, tuple, Set_, Dict_)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            if depth > MAX_DEPTH:
                yield f"nests deeper than {MAX_DEPTH} levels"
                return
        reason = value_reason(node)
        if reason:
            yield reason
        if isinstance(node, Dict_):
            yield from filter(None, (key_reason(key) for key, _ in node.pairs))
        if isinstance(node, Set_):
            yield from filter(None, (key_reason(item) for item in node.items))
        pending.extend((child, depth + 1) for child in children(node))


def reasons(trace: Trace) -> List[str]:
    """Why this pickle is not data only (empty: it is): each call, each BUILD and each value, judged once."""
    found = [reason for call in trace.calls for reason in [call_reason(call)] if reason]
    found.extend(reason for target, state in trace.builds for reason in [build_reason(target, state)] if reason)
    found.extend(walk(trace))
    return list(dict.fromkeys(found))

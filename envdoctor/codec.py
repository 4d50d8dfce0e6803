"""The one codec between the report's dataclasses and their JSON: read from the fields and their hints.

A field is written under its own name, in the order of the fields, as its type says: an enum by its
value, a nested dataclass as an object, a tuple as a list, a mapping copied as it is. Reading goes
back the same way and stays as tolerant as a recorded report needs: a float is `float(value)`, a
missing field with a default is that default, one without is a KeyError, and anything of the wrong
shape raises TypeError, KeyError or ValueError for the reader to turn into one line.

Where the JSON differs from the field, the field says so once with `codec.field(...)` (another key,
rounding, left out at its default, its own reader or writer, what a missing key means), and a class
whose keys come in another order than its fields names that order in `json_order`.
"""

from __future__ import annotations

import dataclasses
import enum
from functools import lru_cache
from typing import Any, Callable, Mapping, NamedTuple, Optional, Tuple, Union, get_args, get_origin, get_type_hints

MISSING: Any = dataclasses.MISSING
SPEC = "envdoctor.codec"


class Spec(NamedTuple):
    """How one field's JSON differs from the field; the defaults say it does not."""

    key: Optional[str] = None
    places: Optional[int] = None  # written rounded to this many decimals (a float, or each value of a mapping)
    omit_default: bool = False  # left out of the JSON while it holds its default, so older readers see no new key
    write: Optional[Callable[[Any], Any]] = None
    read: Optional[Callable[[Any], Any]] = None
    absent: Optional[Callable[[Mapping[str, Any]], Any]] = None  # the value when the key is missing, from the rest of the object


def field(default: Any = MISSING, *, default_factory: Any = MISSING, **spec: Any) -> Any:
    """A dataclass field whose JSON differs from it as `spec` (Spec's names) says."""
    return dataclasses.field(default=default, default_factory=default_factory, metadata={SPEC: Spec(**spec)})


class Slot(NamedTuple):
    """One field as the codec sees it: its name, its JSON key, its resolved type, how it differs, its default."""

    name: str
    key: str
    hint: Any
    spec: Spec
    default: Any
    required: bool


@lru_cache(maxsize=None)
def slots(cls: type) -> Tuple[Slot, ...]:
    """The fields of the dataclass `cls` in the order of its JSON keys (`cls.json_order`, else its fields')."""
    hints = get_type_hints(cls)
    made = {}
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(SPEC, Spec())
        required = f.default is MISSING and f.default_factory is MISSING
        made[f.name] = Slot(f.name, spec.key or f.name, hints[f.name], spec, f.default, required)
    return tuple(made[name] for name in getattr(cls, "json_order", made))


def same(text: str) -> str:
    return text


def encode(value: Any, text: Callable[[str], str] = same) -> Any:
    """The JSON form of `value`: dataclasses as objects, enums by value, tuples as lists, mappings
    copied. Every text the report carries passes through `text` on its way out (redaction), except the
    report's own words: its keys and its enums' values, which no environment's secret can stand for."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode_fields(value, text)
    if isinstance(value, enum.Enum):
        return value.value
    return carried(value, text)


def carried(value: Any, text: Callable[[str], str]) -> Any:
    """A value the report carries as it was recorded (facts, evidence, messages), each text through `text`."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return {text(k) if isinstance(k, str) else k: encode(v, text) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode(item, text) for item in value]
    return value


def encode_fields(instance: Any, text: Callable[[str], str]) -> dict:
    data = {}
    for slot in slots(type(instance)):
        value = getattr(instance, slot.name)
        if slot.spec.omit_default and value == slot.default:
            continue
        data[slot.key] = carried(slot.spec.write(value), text) if slot.spec.write else rounded(encode(value, text), slot.spec.places)
    return data


def rounded(value: Any, places: Optional[int]) -> Any:
    if places is None or value is None:
        return value
    if isinstance(value, dict):
        return {k: round(v, places) for k, v in value.items()}
    return round(value, places)


def decode(cls: type, data: Any) -> Any:
    """The dataclass `cls` read from its JSON object `data`."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__} is a JSON object, not {type(data).__name__}")
    values = {}
    for slot in slots(cls):
        if slot.key in data:
            values[slot.name] = slot.spec.read(data[slot.key]) if slot.spec.read else read(slot.hint, data[slot.key])
        elif slot.spec.absent is not None:
            values[slot.name] = slot.spec.absent(data)
        elif slot.required:
            raise KeyError(slot.key)
    return cls(**values)


def read(hint: Any, value: Any) -> Any:
    """`value` as the type `hint` reads it; what no rule names (text, numbers, mappings, Any) is kept as recorded."""
    origin = get_origin(hint)
    if origin is Union:
        inner = next(arg for arg in get_args(hint) if arg is not type(None))
        return None if value is None else read(inner, value)
    if origin is tuple:
        return tuple(read(get_args(hint)[0], item) for item in value)
    if dataclasses.is_dataclass(hint):
        return decode(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint is float:
        return float(value)
    return value


def texts(value: Any) -> Tuple[str, ...]:
    """A recorded list of lines shown as text, each item as text whatever it was recorded as."""
    return tuple(str(item) for item in value)

"""SB3 model checks: judge facts["models"] (static forensics + what the target offers) for each file.

Facts: docs/knowledge/sb3-model-files.md §3c (failure matrix), §4a (SB3's json_to_data), §4b (load matrix);
DLR-RM/stable-baselines3#2115 (segfault when training continues on another machine).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Iterable, List, Mapping

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.target import TargetView
from envdoctor.knowledge import sb3_advice, sb3_verdicts
from envdoctor.knowledge.sb3_schedules import SCHEDULE_KEYS
from envdoctor.model import PYTHON, Finding, Remedy, Severity

REFERENCES = ("https://github.com/DLR-RM/stable-baselines3/issues/2115",)
PIP_NAMES = {"stable_baselines3": "stable-baselines3", "sb3_contrib": "sb3-contrib", "gymnasium": "gymnasium", "gym": "gym", "torch": "torch", "cloudpickle": "cloudpickle", "numpy": "numpy"}
DRIFT = (("stable_baselines3", "stable-baselines3", "SB3"), ("torch", "torch", "torch"), ("gymnasium", "gymnasium", "Gymnasium"))


def models(facts: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    return list(facts["models"].get("files", ()))


def target(facts: Mapping[str, Any]) -> Mapping[str, Any]:
    """The target side of the model facts; empty when it could not be gathered."""
    found = facts["models"].get("target") or {}
    return {} if "error" in found else found


def name(model: Mapping[str, Any]) -> str:
    return PurePath(model["path"]).name


def remedies(model: Mapping[str, Any], keys: Iterable[str]) -> tuple:
    """The custom_objects load call and the sanitize command, where they cover `keys`; for a pickle or
    torch file that is not an SB3 archive (sb3/pickle_file.py), reading it where it was written."""
    if model.get("kind") in ("pickle", "torch"):
        return (Remedy(
            f"Read {name(model)} under the Python that wrote it, or write it again here from the code that made it "
            "(a file that moves between machines and Python versions should hold data, not pickled functions)."
        ),)
    keys = set(keys)
    steps = []
    if keys <= set(model.get("schedules", {})) and keys:
        steps.append(Remedy("Load it with plain numbers instead of the pickled schedules (SB3 then never decodes them):", sb3_advice.load_call(model), PYTHON))
    if sb3_advice.can_sanitize(model) and keys <= set(SCHEDULE_KEYS):
        steps.append(Remedy("Or write a copy whose schedules are plain numbers; it loads anywhere with a plain .load():", sb3_advice.sanitize_command(model)))
    blockers = [e["key"] for e in sb3_advice.sanitize_blockers(model) if e["verdict"] != "dangerous"]
    if blockers:
        steps.append(Remedy(
            f"{', '.join(blockers)} cannot be replaced by numbers: load with custom_objects giving your real classes "
            f"(e.g. custom_objects={{\"policy_kwargs\": dict(features_extractor_class=YourExtractor)}}) under the Python that saved it, then save again."
        ))
    return tuple(steps)


@check("sb3.dangerous-pickle", "A model whose pickles go beyond what genuine SB3 models hold (they can run code when loaded)", requires=("models",))
def dangerous_pickle(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for model in models(facts):
        bad = [e for e in model["entries"] if e["verdict"] == "dangerous"]
        members = [m for m in model.get("weights", ()) if m["verdict"] == "dangerous"]
        if not bad and not members:
            continue
        parts = []
        if bad:
            parts.append(
                "Loading a model unpickles its `:serialized:` entries, and these name, call or run things that genuine "
                "SB3 models never do, or are known to reach out (" + "; ".join(r for e in bad for r in e["reasons"]) + ")."
            )
        if members:
            parts.append(
                "Its weights hold pickles that torch.load(weights_only=True) refuses, the loader SB3 relies on since "
                "torch 2.6 made it the default; an older torch, or weights_only=False, would run them ("
                + "; ".join(f"{m['name']}: {r}" for m in members for r in m["reasons"]) + ")."
            )
        parts.append("What envdoctor cannot judge counts as dangerous too. envdoctor only read the bytes; nothing was executed.")
        yield Finding(
            id="sb3.dangerous-pickle",
            severity=Severity.ERROR,
            title=f"{name(model)} holds pickles that can run code when loaded: do not load it",
            explanation=" ".join(parts),
            evidence={"model": model["path"], "entries": {e["key"]: e["reasons"] for e in bad}, "members": {m["name"]: m["reasons"] for m in members}},
            remedies=(remedies(model, [e["key"] for e in bad]) if not members else ()) or dangerous_remedies([e["key"] for e in bad]),
        )


@check("sb3.contains-code", "A model holding pickled functions or objects that are not plain data (never proven safe)", requires=("models",))
def contains_code(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for model in models(facts):
        coded = [e for e in model["entries"] if e["verdict"] == "code"]
        if not coded:
            continue
        functions = sum(len(e["functions"]) for e in coded)
        objects = sum(1 for e in coded if not e["functions"])
        keys = ", ".join(e["key"] for e in coded)
        parts = [f"{functions} pickled function{'s' if functions != 1 else ''}"] if functions else []
        parts += [f"{objects} {'entries' if objects != 1 else 'entry'} that {'are' if objects != 1 else 'is'} not plain data"] if objects else []
        what = " and ".join(parts)
        yield Finding(
            id="sb3.contains-code",
            severity=Severity.WARNING,
            title=f"{name(model)} contains {what} ({keys}): code cannot be proven safe by reading it"
                  + ("; `envdoctor sanitize` writes a copy without it" if sb3_advice.sanitizable(model) else ""),
            explanation=(
                "envdoctor calls a pickle safe only when it builds nothing but data from a short closed list of "
                "constructors. These entries hold code (a lambda, a closure, a callable) or objects outside that list, "
                "which run when SB3 loads or trains the model. What the code reads is shown for forensics ("
                + "; ".join(r for e in coded for r in e["reasons"]) + "), but reading code proves nothing about it."
            ),
            evidence={"model": model["path"], "entries": {e["key"]: e["reasons"] for e in coded}},
            remedies=remedies(model, [e["key"] for e in coded]),
        )


@check("sb3.unusable-number", "A model storing a learning rate or clip range SB3 cannot train with (NaN, infinite, negative)", requires=("models",))
def unusable_number(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for model in models(facts):
        bad = model.get("unusable_numbers") or {}
        if not bad:
            continue
        yield Finding(
            id="sb3.unusable-number",
            severity=Severity.ERROR,
            title=f"{name(model)} stores {', '.join(f'{k} = {v}' for k, v in bad.items())}: SB3 cannot train with it",
            explanation=(
                "SB3 rebuilds its schedules from these plain numbers at load and trains with them as they are: a NaN or "
                "infinite rate turns every weight into NaN at the first update, a negative one climbs the loss."
            ),
            evidence={"model": model["path"], "values": dict(bad)},
            remedies=remedies(model, list(bad)),
        )


def dangerous_remedies(keys: List[str]) -> tuple:
    """Never a plain load: SB3 skips decoding only the keys given in custom_objects."""
    placeholders = ", ".join(f"{key!r}: None" for key in keys)
    return (
        Remedy("Ask the author for a clean file; do not load this one as it is."),
        Remedy(
            "If you must load it, give every dangerous entry in custom_objects so SB3 never decodes it "
            f"(custom_objects={{{placeholders}}}), and only where nothing of value can be reached."
        ),
    )


@check("sb3.unsafe-member", "A model zip with members SB3 never writes (../ paths, links, special files)", requires=("models",))
def unsafe_member(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for model in models(facts):
        bad = {m["name"]: m["unsafe"] for m in model.get("members", ()) if m.get("unsafe")}
        if not bad:
            continue
        yield Finding(
            id="sb3.unsafe-member",
            severity=Severity.ERROR,
            title=f"{name(model)} has {len(bad)} member(s) SB3 never writes: it was not saved by SB3 as it is",
            explanation=(
                "SB3 writes plain members with fixed names. A member whose name climbs out of the folder it is unpacked "
                "into, or that is a link or a special file, is what a crafted archive uses to overwrite files when "
                "someone unzips it: " + "; ".join(f"{member!r}: {why}" for member, why in bad.items()) + "."
            ),
            evidence={"model": model["path"], "members": bad},
            remedies=(Remedy("Do not unzip it; ask its author for the file SB3 saved. `envdoctor sanitize` refuses it."),),
        )


@check("sb3.corrupt-entry", "A model entry SB3 cannot decode (load raises)", requires=("models",))
def corrupt_entry(facts: Mapping[str, Any]) -> Iterable[Finding]:
    for model in models(facts):
        bad = [e for e in model["entries"] if e["verdict"] == "corrupt"]
        if not bad:
            continue
        yield Finding(
            id="sb3.corrupt-entry",
            severity=Severity.ERROR,
            title=f"{name(model)}: {', '.join(e['key'] for e in bad)} cannot be decoded; loading raises",
            explanation="SB3 catches only RuntimeError, TypeError and AttributeError while decoding; bad base64 or a broken pickle stops the load.",
            evidence={"model": model["path"], "entries": {e["key"]: e["reasons"] for e in bad}},
            remedies=remedies(model, [e["key"] for e in bad]),
        )


def when_run(model: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """When the pickled function runs: SB3's use of its entry, or for a plain pickle file, when the program calls it."""
    return "when the program calls it" if model.get("kind") in ("pickle", "torch") else row["runs"]


@check("sb3.foreign-bytecode", "Code in a model pickled by another Python minor version", requires=("models",))
def foreign_bytecode(facts: Mapping[str, Any]) -> Iterable[Finding]:
    here = target(facts)
    minor = sb3_verdicts.target_minor(here)
    if minor is None:
        return
    for model in models(facts):
        rows = [r for r in sb3_verdicts.code_effects(model, here) if r["effect"] in ("crash-risk", "type-error")]
        if not rows:
            continue
        crash = [r for r in rows if r["effect"] == "crash-risk"]
        lost = [r for r in rows if r["effect"] == "type-error"]
        keys = sorted({r["key"] for r in rows})
        producers = sorted({r["producer"] for r in rows})
        fatal = crash or any(r["key"] not in SCHEDULE_KEYS for r in lost)
        parts = []
        if crash:
            parts.append("Calling it can segfault: the bytecode is rebuilt without complaint and then run by an interpreter that reads it differently. " + "; ".join(f"`{r['key']}` ({r['qualname']}) runs {when_run(model, r)}" for r in crash) + ".")
        if lost:
            parts.append("Other code has another CodeType layout: unpickling raises TypeError, which SB3 turns into a warning and silently uses the constructor default instead (" + ", ".join(f"`{r['key']}`" for r in lost) + ").")
        undefined = {r["key"]: r["undefined_opcodes"] for r in rows if r["undefined_opcodes"]}
        if undefined:
            parts.append(f"Opcodes undefined on Python {minor}: {undefined}, a certain crash.")
        yield Finding(
            id="sb3.foreign-bytecode",
            severity=Severity.ERROR if fatal else Severity.WARNING,
            title=f"{name(model)} holds code pickled by Python {', '.join(producers)}; this is Python {minor}" + (": calling it can segfault" if crash else ": SB3 will silently drop it"),
            explanation=" ".join(parts),
            evidence={"model": model["path"], "target_python": minor, "functions": rows},
            remedies=remedies(model, keys),
            references=REFERENCES,
        )


@check("sb3.missing-module", "A module a model needs is not importable in the target", requires=("models",))
def missing_module(facts: Mapping[str, Any]) -> Iterable[Finding]:
    here = target(facts)
    numpy_here = (here.get("versions") or {}).get("numpy")
    for model in models(facts):
        missing = {m: keys for m, keys in sb3_verdicts.missing_modules(model, here).items() if not (numpy_here and m.split(".")[0] == "numpy")}
        if not missing:
            continue
        keys = sorted({k for ks in missing.values() for k in ks})
        tops = sorted({m.split(".")[0] for m in missing})
        installable = [PIP_NAMES[t] for t in tops if t in PIP_NAMES]
        steps = list(remedies(model, keys))
        if installable:
            steps.append(Remedy("Install what the file needs:", view_of(facts, TargetView).installer_command("install", installable)))
        others = [t for t in tops if t not in PIP_NAMES]
        if others:
            steps.append(Remedy(f"Make {', '.join(others)} importable (the code that defined the pickled objects must be on PYTHONPATH)."))
        yield Finding(
            id="sb3.missing-module",
            severity=Severity.ERROR,
            title=f"{name(model)} needs {', '.join(sorted(missing))}, which this Python cannot import",
            explanation="SB3 does not catch ModuleNotFoundError while decoding the model, so loading raises. Needed by: " + "; ".join(f"{m} ({', '.join(k)})" for m, k in sorted(missing.items())) + ".",
            evidence={"model": model["path"], "missing": missing},
            remedies=tuple(steps),
        )


@check("sb3.numpy-major", "A model saved with another NumPy major version", requires=("models",))
def numpy_major(facts: Mapping[str, Any]) -> Iterable[Finding]:
    here = sb3_verdicts.major_of((target(facts).get("versions") or {}).get("numpy"))
    if here is None:
        return
    for model in models(facts):
        saved = sb3_verdicts.model_numpy_major(model)
        if saved is None or saved == here:
            continue
        newer = saved > here
        yield Finding(
            id="sb3.numpy-major",
            severity=Severity.ERROR if newer else Severity.WARNING,
            title=f"{name(model)} was saved with NumPy {saved}; this environment has NumPy {here}",
            explanation=(
                "NumPy 2 pickles name `numpy._core`, which NumPy 1 does not have: loading the spaces and arrays raises "
                "ModuleNotFoundError: No module named 'numpy._core'." if newer else
                "NumPy 1 pickles name `numpy.core`, which NumPy 2 only keeps as a deprecated alias: it loads with warnings today "
                "and will break when the alias goes."
            ),
            evidence={"model": model["path"], "saved_numpy": model["system_info"].get("numpy"), "numpy_major_here": here},
            remedies=(Remedy(f"Use NumPy {saved} to load it (then save it again to convert):", f'pip install "numpy>={saved},<{saved + 1}"'),),
            references=("https://github.com/ray-project/ray/issues/48053",),
        )


@check("sb3.version-drift", "SB3, torch or Gymnasium versions differ from the ones that saved a model", requires=("models",))
def version_drift(facts: Mapping[str, Any]) -> Iterable[Finding]:
    versions = target(facts).get("versions") or {}
    for model in models(facts):
        info = model["system_info"]
        drift = {}
        for saved_key, distribution, label in DRIFT:
            saved, here = info.get(saved_key), versions.get(distribution)
            if saved and here and saved.split("+")[0].split(".")[:2] != here.split("+")[0].split(".")[:2]:
                drift[label] = {"saved": saved, "here": here}
        if not drift:
            continue
        yield Finding(
            id="sb3.version-drift",
            severity=Severity.INFO,
            title=f"{name(model)} was saved with other versions: " + ", ".join(f"{k} {v['saved']} (here {v['here']})" for k, v in drift.items()),
            explanation="Usually harmless; when a load misbehaves, retry with the saving versions to tell the file from the versions apart.",
            evidence={"model": model["path"], "drift": drift},
        )

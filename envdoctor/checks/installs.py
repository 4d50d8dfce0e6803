"""Installs that did not finish, read from the metadata folders themselves: one distribution's metadata
twice in one folder, and what pip moved aside under a `~` name and never removed; and the .pth files
that fail at every start of the interpreter (a package removed without its .pth).

The first two come from an install, upgrade or uninstall that was interrupted (Ctrl-C, a full disk, a killed
container build) or from two installers writing one environment. pip ignores `~` entries ("Ignoring
invalid distribution ~orch", pypa/pip#11849); for a name with two metadata folders, pip, importlib.metadata
and the files actually imported may each tell another version.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import defaultdict
from typing import Any, Dict, Iterable, List, Mapping, Tuple

from envdoctor.checks import check
from envdoctor.facts import view_of
from envdoctor.facts.target import TargetView, normalize, parse_version
from envdoctor.model import Finding, Remedy, Severity

PIP_LEFTOVERS = "https://github.com/pypa/pip/issues/11849"
PROJECT_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508's name


def twice_in_one_folder(target: TargetView) -> Dict[Tuple[str, str], List[Mapping[str, Any]]]:
    """(folder, normalized name) -> its metadata entries, where one folder holds more than one."""
    by_place: Dict[Tuple[str, str], List[Mapping[str, Any]]] = defaultdict(list)
    for dist in (*target.distribution_list, *target.shadowed):
        if isinstance(dist, Mapping) and isinstance(dist.get("name"), str) and isinstance(dist.get("location"), str):
            by_place[(dist["location"], normalize(dist["name"]))].append(dist)
    return {place: dists for place, dists in by_place.items() if len(dists) > 1}


def newest(dists: List[Mapping[str, Any]]) -> str:
    """The highest version among `dists` that parses, else the first one's."""
    parsed = [(parse_version(d.get("version")), d.get("version", "")) for d in dists]
    known = [pair for pair in parsed if pair[0] is not None]
    return max(known)[1] if known else dists[0].get("version", "")


def clean_reinstall(target: TargetView, name: str, times: int, version: str) -> str:
    """Uninstall `name` once per metadata folder (pip removes one at a time), then install `version`."""
    uninstall = target.installer_command("uninstall", [name])
    return " && ".join([uninstall] * times + [target.installer_command("install", [f"{name}=={version}"])])


@check("requirements.installed-twice", "One distribution with two metadata folders in one site-packages (an install that did not finish)", requires=("target",))
def installed_twice(facts: Mapping[str, Any]) -> Iterable[Finding]:
    target = view_of(facts, TargetView)
    for (location, _), dists in sorted(twice_in_one_folder(target).items()):
        name = dists[0]["name"]
        versions = [d.get("version", "") for d in dists]
        wanted = newest(dists)
        yield Finding(
            id="requirements.installed-twice",
            severity=Severity.WARNING,
            title=f"{name} is installed twice in one folder ({' and '.join(versions)})",
            explanation=(
                f"{location} holds {len(dists)} metadata folders of {name}: an install, upgrade or uninstall that did not "
                "finish, or two installers writing one environment. The files Python imports belong to whichever wrote last; "
                f"pip, importlib.metadata and this report each read one folder, so the version they name ({versions[0]} here) "
                "may not be the one that runs, and `pip uninstall` removes one folder at a time."
            ),
            evidence={"name": name, "location": location, "metadata": [d.get("metadata") for d in dists], "versions": versions},
            remedies=(
                Remedy(
                    f"Uninstall {name} until no metadata is left, then install one version ({wanted}, the newest here: pick the one your stack needs):",
                    clean_reinstall(target, name, len(dists), wanted),
                ),
            ),
            references=(PIP_LEFTOVERS,),
        )


def leftover_paths(leftovers: Iterable[Mapping[str, Any]]) -> str:
    return " ".join(shlex.quote(os.path.join(entry["location"], entry["entry"])) for entry in leftovers)


@check("requirements.pip-leftovers", "Folders pip moved aside under a `~` name during an install or uninstall and never removed", requires=("target",))
def pip_leftovers(facts: Mapping[str, Any]) -> Iterable[Finding]:
    target = view_of(facts, TargetView)
    if not target.leftovers:
        return
    names = sorted({entry["name"] for entry in target.leftovers if PROJECT_NAME.fullmatch(entry.get("name") or "")})
    gone = [name for name in names if target.version_of(name) is None]
    remedies = [Remedy("Remove them (pip ignores them as invalid distributions; nothing imports them):", f"rm -rf -- {leftover_paths(target.leftovers)}")]
    if gone:
        remedies.append(Remedy(f"Then install what the interrupted operation was replacing: {', '.join(gone)} is no longer installed:", target.installer_command("install", gone)))
    yield Finding(
        id="requirements.pip-leftovers",
        severity=Severity.WARNING if gone else Severity.INFO,
        title=f"Leftovers of an interrupted pip install or uninstall: {', '.join(entry['entry'] for entry in target.leftovers[:4])}"
        + (f" and {len(target.leftovers) - 4} more" if len(target.leftovers) > 4 else ""),
        explanation=(
            "While it replaces or removes a distribution, pip renames its folders with a leading `~`, and removes them when it "
            "finishes; these were left by one that did not finish. pip warns \"Ignoring invalid distribution\" for each."
            + (f" The distribution they belonged to is not installed any more: {', '.join(gone)}." if gone else " The distribution they belonged to is installed again.")
        ),
        evidence={"leftovers": [dict(entry) for entry in target.leftovers], "not_installed": gone},
        remedies=tuple(remedies),
        references=(PIP_LEFTOVERS,),
    )


@check("requirements.pth-error", "A .pth file that fails at every start of the interpreter (its package gone)", requires=("target",))
def pth_error(facts: Mapping[str, Any]) -> Iterable[Finding]:
    target = view_of(facts, TargetView)
    for error in target.pth_errors:
        path = error["pth"]
        yield Finding(
            id="requirements.pth-error",
            severity=Severity.WARNING,
            title=f"{os.path.basename(path)} fails at every start of this Python: line {error['line']}: {error['error']}",
            explanation=(
                f"site runs the import lines of the .pth files in site-packages as the interpreter starts; line {error['line']} "
                f"of {path} raised, so site printed the error, ignored the rest of that file and went on. Whatever the file "
                "was to set up (an editable install's import hook, a path) is missing in every process, and the message is "
                "printed in each. A package uninstalled or an editable project folder deleted without its .pth leaves one."
            ),
            evidence=dict(error),
            remedies=(
                Remedy("Reinstall the package the file belongs to, or, if it is gone, remove the file:", f"rm -- {shlex.quote(path)}"),
            ),
            references=("https://docs.python.org/3/library/site.html",),
        )

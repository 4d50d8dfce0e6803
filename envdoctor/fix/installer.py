"""The target interpreter's own installer, pip or uv: the exact commands a plan prints, and their runner.

A plan's commands name the target interpreter explicitly (`PY -m pip`, `uv pip --python PY`), so a
printed plan can be pasted into any shell and does the same as `--apply`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence, Tuple

from envdoctor.errors import UsageError
from envdoctor.fix import FixError
from envdoctor.proc.children import ChildResult, run_child, stream_child

INSTALLERS = ("pip", "uv")
# Installing a CUDA torch downloads gigabytes; a freeze or an uninstall is quick.
INSTALL_TIMEOUT_S = 3 * 3600.0
QUERY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Installer:
    """pip run by the target interpreter, or uv pointed at it."""

    name: str
    python: str
    uv: Optional[str] = None

    def _base(self, verb: str) -> Tuple[str, ...]:
        if self.name == "uv":
            return (self.uv or "uv", "pip", verb, "--python", self.python)
        return (self.python, "-m", "pip", verb)

    def install(self, args: Sequence[str]) -> Tuple[str, ...]:
        return self._base("install") + tuple(args)

    def uninstall(self, names: Sequence[str]) -> Tuple[str, ...]:
        # pip asks for confirmation per package unless told -y; uv never asks.
        return self._base("uninstall") + (("-y",) if self.name == "pip" else ()) + tuple(names)

    def freeze(self) -> Tuple[str, ...]:
        # --all keeps pip/setuptools in the list so a rollback restores them too; uv lists everything anyway.
        return self._base("freeze") + (("--all",) if self.name == "pip" else ())

    def to_json(self) -> dict:
        return {"name": self.name, "python": self.python, "uv": self.uv}

    @classmethod
    def from_json(cls, data: Mapping) -> "Installer":
        return cls(name=data["name"], python=data["python"], uv=data.get("uv"))


def choose(target_facts: Mapping, python: str, requested: Optional[str]) -> Installer:
    """The installer to use for `python`: the requested one if the target has it, else pip, else uv."""
    installers = target_facts.get("installers")
    installers = installers if isinstance(installers, Mapping) else {}  # a recorded report's other shapes name none
    available = {"pip": bool(installers.get("pip")), "uv": bool(installers.get("uv"))}
    if requested:
        if not available[requested]:
            raise UsageError(f"--installer {requested}: {requested} is not available for {python}")
        name = requested
    elif available["pip"]:
        name = "pip"
    elif available["uv"]:
        name = "uv"
    else:
        raise UsageError(f"{python} has neither pip nor uv; install one (`{python} -m ensurepip`) and run again")
    return Installer(name=name, python=python, uv=installers.get("uv") if name == "uv" else None)


def run_step(argv: Sequence[str], on_line: Callable[[str], None]) -> ChildResult:
    """Run one changing step, streaming its output."""
    return stream_child(argv, on_line, timeout=INSTALL_TIMEOUT_S)


def freeze(installer: Installer) -> Tuple[str, ...]:
    """The environment's requirement lines as the installer writes them, in its order."""
    result = run_child(installer.freeze(), timeout=QUERY_TIMEOUT_S)
    if not result.ok:
        detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
        raise FixError(f"`{' '.join(installer.freeze())}` {result.describe()}: {detail[0]}")
    return tuple(line for line in result.stdout.splitlines() if line.strip())

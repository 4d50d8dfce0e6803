"""Shared fixtures: the CLI run as a real child process, and real virtual environments built once per session."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints" / "test.txt"


class Run:
    """A finished `envdoctor` invocation."""

    def __init__(self, completed: subprocess.CompletedProcess):
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self) -> str:
        return f"<Run rc={self.returncode}\nstdout={self.stdout[-2000:]}\nstderr={self.stderr[-2000:]}>"


def run_envdoctor(*args: str, env: Optional[Dict[str, str]] = None, cwd=None, unset: Iterable[str] = (), input: Optional[str] = None, timeout: float = 300) -> Run:
    """Run `python -m envdoctor ARGS` in a child process with extra variables `env` and `unset` removed."""
    environ = {k: v for k, v in os.environ.items() if k not in set(unset)}
    environ.update(env or {})
    environ.setdefault("NO_COLOR", "1")
    completed = subprocess.run(
        [sys.executable, "-m", "envdoctor", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        input=input,
        timeout=timeout,
    )
    return Run(completed)


@pytest.fixture
def envdoctor(tmp_path):
    """Run the CLI with the working directory in a temporary folder, so saved reports land there."""

    def run(*args, **kwargs):
        kwargs.setdefault("cwd", tmp_path)
        return run_envdoctor(*args, **kwargs)

    return run


UV = Path(sys.executable).with_name("uv")
# pip's options naming where wheels come from, and uv's flag for each (torch is held by CONSTRAINTS).
WHEEL_SOURCES = {"find-links": "--find-links", "index-url": "--index-url", "extra-index-url": "--extra-index-url"}


def pip_wheel_sources() -> List[str]:
    """uv flags for the wheel sources pip is configured with here (files and PIP_* variables, the variables
    winning), so uv resolves what pip would, e.g. torch's local CPU wheel rather than a CUDA build."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    chosen: Dict[str, Tuple[bool, List[str]]] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        section, _, option = key.rpartition(".")
        from_variable = section == ":env:"
        if option in WHEEL_SOURCES and (from_variable or not chosen.get(option, (False,))[0]):
            chosen[option] = (from_variable, value.strip("'\"").split())
    # pip takes the best version from any of its sources; uv's default would stop at the first index with the name.
    flags = ["--index-strategy", "unsafe-best-match"]
    for option, (_, values) in chosen.items():
        for value in values:
            flags += [WHEEL_SOURCES[option], value]
    return flags


def uv(*args: str) -> None:
    """uv with its wheel cache under the repository's .cache/ unless UV_CACHE_DIR says otherwise: kept between sessions."""
    environ = {"UV_CACHE_DIR": str(REPO / ".cache" / "uv"), **os.environ}
    done = subprocess.run([str(UV), *args], capture_output=True, text=True, env=environ)
    assert done.returncode == 0, f"uv {' '.join(args)}:\n{done.stderr[-3000:]}"


class VenvFactory:
    """Real virtual environments with real wheels, made by uv from one wheel cache, built once per test session and shared."""

    def __init__(self, base: Path):
        self.base = base
        self.built: Dict[str, Path] = {}
        self.sources = pip_wheel_sources()

    def python(self, name: str) -> Path:
        return self.base / name / "bin" / "python"

    def get(self, name: str, packages: Iterable[str] = (), interpreter: str = sys.executable, with_pip: bool = False) -> Path:
        """The interpreter of venv `name`, created on first use with `packages` installed (torch pinned)."""
        if name in self.built:
            return self.built[name]
        seed = ("--seed", *self.sources) if with_pip else ()
        uv("venv", "--quiet", *seed, "--python", interpreter, str(self.base / name))
        if packages:
            self.install(name, *packages)
        self.built[name] = self.python(name)
        return self.built[name]

    def install(self, name: str, *packages: str) -> None:
        uv("pip", "install", "--quiet", "--python", str(self.python(name)), *self.sources, "--constraint", str(CONSTRAINTS), *packages)

    def uninstall(self, name: str, *packages: str) -> None:
        uv("pip", "uninstall", "--quiet", "--python", str(self.python(name)), *packages)


def pip(args, python: Path) -> None:
    """This interpreter's pip acting on another environment (no pip needed inside it)."""
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="session")
def venvs(tmp_path_factory) -> VenvFactory:
    return VenvFactory(tmp_path_factory.mktemp("venvs"))


def write_host_root(root: Path, files: Dict[str, str]) -> Path:
    """A directory standing in for `/` under ENVDOCTOR_ROOT: each absolute path gets the given text
    (a path ending in "/" becomes a directory)."""
    for absolute, text in files.items():
        target = root / absolute.lstrip("/")
        if absolute.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    return root


def findings_by_id(report: dict) -> Dict[str, list]:
    grouped: Dict[str, list] = {}
    for finding in report["findings"]:
        grouped.setdefault(finding["id"], []).append(finding)
    return grouped


def changed_report(source: Path, destination: Path, change: Callable[[dict], None]) -> Path:
    """A copy of the recorded report `source` with `change(facts)` applied, for `check --from`."""
    report = json.loads(Path(source).read_text(encoding="utf-8"))
    change(report["facts"])
    destination.write_text(json.dumps(report), encoding="utf-8")
    return destination


SB3_DATA = Path(__file__).parent / "data" / "sb3"
FOREIGN = ("3.8", "3.12", "3.13")


def pyenv_python(minor: str) -> str:
    root = Path(subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip())
    found = sorted(root.glob(f"versions/{minor}.*/bin/python{minor}"))
    if not found:
        pytest.fail(f"pyenv has no Python {minor}; these tests need it")
    return str(found[-1])


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `build` once per test run: pytest-xdist's workers share it (the first to
    need it builds it under a lock in their common temporary folder); a run without workers builds it in its own."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def make_models(folder: Path, venvs: VenvFactory) -> None:
    """Every test model as NAME.zip in `folder`: real ones, foreign-Python splices, dangerous and corrupt ones."""
    sys.path.insert(0, str(SB3_DATA))
    from splice import dangerous_payload, splice

    subprocess.run([sys.executable, str(SB3_DATA / "make_models.py"), str(folder)], check=True, capture_output=True, timeout=600)
    for minor in FOREIGN:
        python = venvs.get(f"cloudpickle-{minor}", ["cloudpickle"], interpreter=pyenv_python(minor))
        made = json.loads(subprocess.run([str(python), str(SB3_DATA / "make_foreign.py")], check=True, capture_output=True, text=True).stdout)
        payloads = {key: made[key] for key in ("learning_rate", "lr_schedule", "clip_range")}
        name = f"foreign_py{minor.replace('.', '')}"
        splice(folder / "mppo_closure.zip", folder / f"{name}.zip", payloads, python=made["python"])
    marker = folder / "PWNED"
    splice(folder / "mppo_plain.zip", folder / "dangerous.zip", {"learning_rate": dangerous_payload(f"touch {marker}")})
    splice(folder / "mppo_closure.zip", folder / "corrupt.zip", {"learning_rate": "this is not base64!"})


@pytest.fixture(scope="session")
def models(tmp_path_factory, venvs) -> dict:
    """name → path of every test model, made once per test run."""
    folder = built_once(tmp_path_factory, "sb3-models", lambda folder: make_models(folder, venvs))
    return {path.stem: path for path in folder.glob("*.zip")}

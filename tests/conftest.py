"""Shared fixtures: the CLI run in this process or as a real child process, recorded facts judged, and real virtual environments built once per session."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pytest

from helpers.pythons import needed_python

REPO = Path(__file__).resolve().parent.parent
TEST_DATA = REPO / "tests" / "data"
CONSTRAINTS = REPO / "constraints" / "test.txt"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The tests of one xdist_group share what they start once (the Ray cluster of tests/fleet): under
    `--dist loadgroup` pytest-xdist sends them to one worker by a suffix it writes into their ids, which
    some pytest releases drop (pytest-dev/pytest-xdist#1386), and then each test would start its own,
    silently. Such a test fails before its fixtures start anything."""
    grouped = getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group")
    if grouped and "@" not in item.nodeid.rpartition("]")[2]:
        pytest.fail(f"--dist loadgroup does not group this test with pytest {pytest.__version__} (pytest-dev/pytest-xdist#1386): use the pytest of constraints/test-venv.txt", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_kept_in_the_session(tmp_path_factory):
    """SB3's learn() without a logger makes a folder under the system's temporary directory that
    nobody removes; the test programs that train a model put theirs in the session's own."""
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))


def interruptible() -> None:
    """`preexec_fn` for a child a test sends SIGINT to: the default disposition, whatever pytest inherited.

    A shell starts a background job (`cmd &`, `nohup`, many CI runners) with SIGINT ignored, and an
    ignored signal stays ignored across exec: such a child, and the Python in it, would never see Ctrl-C.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def eventually(condition: Callable[[], object], what: str, within: float = 30.0) -> object:
    """The first true value of `condition()`, polled until `within` seconds have passed: a state a
    busy machine (load 10 on 2 cores) reaches late is waited for, not slept for."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {within:g} s: {what}"
        time.sleep(0.05)


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


# Variables that act when an interpreter starts (its sys.path, site, streams, warnings): in this
# process they would reach the doctor's children but not the doctor itself.
STARTUP_VARIABLES = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONIOENCODING",
    "PYTHONUTF8", "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONFAULTHANDLER", "PYTHONSTARTUP", "LANG", "LC_ALL", "LC_CTYPE",
})


def run_envdoctor(
    *args: str,
    env: Optional[Dict[str, str]] = None,
    cwd=None,
    unset: Iterable[str] = (),
    input: Optional[str] = None,
    child: bool = False,
    timeout: Optional[float] = None,
) -> Run:
    """`envdoctor ARGS` with extra variables `env` and `unset` removed, run in this process (the same
    entry as `python -m envdoctor`, with the same inputs and outputs), or with `child=True` as a real
    `python -m envdoctor` child process: for tests whose subject is the process itself (signals,
    streams, imports, start-up variables, a wait that must never block the test's own process).
    Past `timeout` seconds either raises subprocess.TimeoutExpired."""
    environ = {k: v for k, v in os.environ.items() if k not in set(unset)}
    environ.update(env or {})
    environ.setdefault("NO_COLOR", "1")
    if child:
        return in_child(args, environ, cwd, input, 300 if timeout is None else timeout)
    acting = sorted(STARTUP_VARIABLES.intersection(env or {}) | STARTUP_VARIABLES.intersection(unset))
    if acting:
        raise TypeError(f"{', '.join(acting)} act at interpreter start-up: pass child=True")
    if args[:1] == ("run",):
        raise TypeError("run hands the command descriptors 0, 1 and 2, which stay the test's own in this process: pass child=True")
    return in_process(args, environ, cwd, input, timeout)


def in_child(args, environ: Dict[str, str], cwd, input: Optional[str], timeout: float) -> Run:
    command = [sys.executable, "-m", "envdoctor", *args]
    return Run(subprocess.run(command, capture_output=True, text=True, env=environ, cwd=cwd, input=input, timeout=timeout))


def in_process(args, environ: Dict[str, str], cwd, input: Optional[str], timeout: Optional[float]) -> Run:
    """`envdoctor.cli.main(args)`, as `python -m envdoctor` calls it, with this process's environment,
    working directory and standard streams set as a child's would be, and restored afterwards."""
    from envdoctor.cli import main

    streams = ChildStreams(input)
    with child_state(environ, cwd, streams), time_limit(["envdoctor", *args], timeout):
        try:
            main(list(args))
            code = 0
        except SystemExit as end:
            code = exit_status(end, streams)
    return Run(subprocess.CompletedProcess(["envdoctor", *args], code, streams.read("stdout"), streams.read("stderr")))


class ChildStreams:
    """Standard streams as a child's over pipes: the locale's encoding and error handler, stderr
    with backslashreplace, no terminal; read back as subprocess.run(text=True) decodes them."""

    def __init__(self, input: Optional[str]):
        encoding, errors = sys.__stdout__.encoding, sys.__stdout__.errors
        self.stdin = io.TextIOWrapper(io.BytesIO((input or "").encode(encoding)), encoding=encoding, errors=errors)
        self.stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=errors)
        self.stderr = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="backslashreplace", line_buffering=True)

    def all(self) -> tuple:
        return self.stdin, self.stdout, self.stderr

    def read(self, name: str) -> str:
        stream = getattr(self, name)
        stream.flush()
        return io.TextIOWrapper(io.BytesIO(stream.buffer.getvalue())).read()


def exit_status(end: SystemExit, streams: ChildStreams) -> int:
    """The exit status the interpreter gives for this SystemExit (a message is written to stderr, status 1)."""
    if end.code is None or isinstance(end.code, int):
        return end.code or 0
    streams.stderr.write(f"{end.code}\n")
    return 1


class PastTimeLimit(BaseException):
    """Raised by SIGALRM in a run past its time limit; a BaseException, so the CLI's handler of
    unexpected errors does not turn it into an exit code."""


@contextlib.contextmanager
def time_limit(command: list, timeout: Optional[float]):
    """subprocess.TimeoutExpired once `timeout` seconds have passed, as subprocess.run(timeout=) raises
    (in the main thread, the only one a signal handler runs in)."""
    if timeout is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise PastTimeLimit()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    except PastTimeLimit:
        raise subprocess.TimeoutExpired(command, timeout) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def child_state(environ: Dict[str, str], cwd, streams: ChildStreams):
    """This process's environment, working directory and standard streams as a fresh
    `python -m envdoctor` would have them, and no answer remembered from an earlier run."""
    from envdoctor import interpreter

    saved_environ, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
    interpreter.identity.cache_clear()  # the interpreter at a path is asked once per process
    try:
        os.environ.clear()
        os.environ.update(environ)
        if cwd is not None:
            os.chdir(cwd)
        # also the original streams: shutil.get_terminal_size() asks sys.__stdout__, a pipe in a child
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams.all()
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__ = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)
        interpreter.identity.cache_clear()


@pytest.fixture
def envdoctor(tmp_path):
    """Run the CLI with the working directory in a temporary folder, so saved reports land there."""

    def run(*args, **kwargs):
        kwargs.setdefault("cwd", tmp_path)
        return run_envdoctor(*args, **kwargs)

    return run


IdsOrNames = Union[str, Sequence[str]]


def judge_recorded(report: Path, only: IdsOrNames = (), skip: IdsOrNames = (), ran: Optional[IdsOrNames] = None, skipped: IdsOrNames = ()) -> dict:
    """The recorded report judged again by the current checks in this process, through the engine as
    `check --from REPORT --only ONLY --skip SKIP --json -` judges it, as that JSON document.

    A check that crashed or was skipped for want of facts gives no finding, just as a check that found
    nothing: so every check `ran` names (ids or domains, by default `only`) must have found or passed,
    except those `skipped` names, which must have been skipped; and no check may have crashed."""
    from envdoctor import engine
    from envdoctor.document import Document

    selection = engine.Selection(only=names(only), skip=names(skip))
    if ran is None and not selection.only:
        raise TypeError("name the checks whose verdict the test reads: only= or ran= (ran=() when none)")
    judged = json.loads(Document.of(engine.rejudge(engine.read_report(Path(report)), selection)).text)
    assert_checks_ran(judged, only if ran is None else ran, skip, skipped)
    return judged


def names(value: IdsOrNames) -> Tuple[str, ...]:
    """Check ids or domains as --only takes them: "a,b", or a sequence of such."""
    from envdoctor.cli.check import split_ids

    return split_ids([value] if isinstance(value, str) else value)


def selected(wanted: Tuple[str, ...], skip: Tuple[str, ...]) -> set:
    """The ids of the checks and linking rules that `wanted` names and `skip` leaves; none when `wanted` is empty."""
    from envdoctor.catalogue import find

    if not wanted:
        return set()
    found = {c.id for c in find().select(wanted, skip).rules}
    assert found, f"{', '.join(wanted)} names no check"
    return found


def assert_checks_ran(document: dict, ran: IdsOrNames, skip: IdsOrNames = (), skipped: IdsOrNames = ()) -> None:
    """In the report `document`, each check `ran` names (less `skip`) found or passed, each one `skipped`
    names was skipped, and none crashed."""
    required, skipped = selected(names(ran), names(skip)), selected(names(skipped), names(skip))
    runs = {run["id"]: (run["status"], run["reason"]) for run in document["checks"]}
    ended = {i: runs.get(i, ("absent", "")) for i in required | skipped}
    crashed = {i: run for i, run in runs.items() if run[0] == "crashed"}
    assert not crashed, f"checks crashed: {crashed}"
    not_run = {i: run for i, run in ended.items() if i not in skipped and run[0] not in ("found", "passed")}
    assert not not_run, f"checks that did not run: {not_run}"
    not_skipped = {i: run for i, run in ended.items() if i in skipped and run[0] != "skipped"}
    assert not not_skipped, f"checks expected to be skipped that were not: {not_skipped}"


@pytest.fixture
def judged():
    """judge_recorded: a recorded report judged in this process, each selected check known to have run."""
    return judge_recorded


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


SB3_DATA = TEST_DATA / "sb3"
FOREIGN = ("3.8", "3.12", "3.13")


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
        python = venvs.get(f"cloudpickle-{minor}", ["cloudpickle"], interpreter=needed_python(minor))
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


NUMPY_1_WHEEL = "bottleneck==1.3.7"


@pytest.fixture(scope="session")
def old_wheel() -> Path:
    """A real wheel built against NumPy 1.x (Bottleneck 1.3.7, whose extensions NumPy 2 refuses), cached."""
    folder = Path(os.environ.get("ENVDOCTOR_TEST_WHEELS") or Path.home() / ".cache" / "envdoctor" / "test-wheels")
    folder.mkdir(parents=True, exist_ok=True)
    found = list(folder.glob("Bottleneck-1.3.7-cp311-*.whl"))
    if not found:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(folder), NUMPY_1_WHEEL], capture_output=True, text=True)
        if done.returncode:
            pytest.fail(f"{NUMPY_1_WHEEL} is neither in {folder} nor downloadable: {done.stderr.strip().splitlines()[-1:]}")
        found = list(folder.glob("Bottleneck-1.3.7-cp311-*.whl"))
    return found[0]


def special_file(path: Path, kind: str) -> Path:
    """A hostile special file of `kind` at `path`: "fifo", "device" (/dev/zero's numbers, or a link to it
    without CAP_MKNOD), "symlink-loop", "sparse-1gb" or "folder"."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
        except PermissionError:
            path.symlink_to("/dev/zero")
    elif kind == "symlink-loop":
        path.symlink_to(path.name)
    elif kind == "sparse-1gb":
        with open(path, "wb") as stream:
            stream.truncate(2**30)
    elif kind == "folder":
        path.mkdir()
    return path

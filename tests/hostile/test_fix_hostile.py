"""Hostile and faulty input to `fix`: damaged records, freeze lines of every form, records that name another
interpreter or a script, records that are FIFOs or devices, and no answer at a confirmation prompt.

A rollback must restore what the record lists, read each freeze line as one requirement, and run nothing the
record names: only the interpreter the user named. The slow tests build real venvs with real tiny wheels
installed from `file://` URLs (so the freeze says `name @ file:///…`) and run the real CLI on them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, Sequence

import pytest

from conftest import pip, run_envdoctor
from helpers.local_wheels import packed_wheel
from envdoctor.errors import UsageError
from envdoctor.fix import FixError
from envdoctor.fix import record as records
from envdoctor.fix.freeze_lines import parse
from envdoctor.fix.installer import Installer
from envdoctor.fix.plan import Plan, Step, StepKind, StepStatus
from envdoctor.fix.rollback import restore_plan

PY = "/envs/hostile/bin/python"
WHEEL_URL = "file:///tmp/wheels%20here/tinypkg-1.0-py3-none-any.whl"
NO_ANSWER = "envdoctor: error: no answer at the prompt: standard input is closed or at its end; pass --yes"
UV_ON_PATH = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


# ---------------------------------------------------------------------------------------------- freeze lines

FREEZE_FORMS = [
    ("torch==2.3.1+cu121", "torch", ("torch==2.3.1+cu121",)),
    ("Typing_Extensions==4.12.2", "typing-extensions", ("Typing_Extensions==4.12.2",)),
    ("weird===1.0.local.build", "weird", ("weird===1.0.local.build",)),
    (f"tinypkg @ {WHEEL_URL}", "tinypkg", (f"tinypkg @ {WHEEL_URL}",)),
    ("certifi @ file:///home/conda/feedstock_root/build_artifacts/certifi_1700000000/work/certifi", "certifi",
     ("certifi @ file:///home/conda/feedstock_root/build_artifacts/certifi_1700000000/work/certifi",)),
    ("repo @ git+https://github.com/o/repo@0123abcd", "repo", ("repo @ git+https://github.com/o/repo@0123abcd",)),
    ("-e git+https://github.com/o/Repo_X@0123abcd#egg=Repo_X", "repo-x", ("-e", "git+https://github.com/o/Repo_X@0123abcd#egg=Repo_X")),
    ("-e /src/my pkg", "-e /src/my pkg", ("-e", "/src/my pkg")),
    ("--editable=/src/mypkg", "-e /src/mypkg", ("-e", "/src/mypkg")),
    ("-e file:///src/uv-editable", "-e file:///src/uv-editable", ("-e", "file:///src/uv-editable")),
    ('pywin32==306 ; sys_platform == "win32"', "pywin32", ('pywin32==306 ; sys_platform == "win32"',)),
    ("numpy==1.26.4  # pinned by hand", "numpy", ("numpy==1.26.4",)),
    ("legacy==0.1dev-r1234", "legacy", ("legacy==0.1dev-r1234",)),
]
COMMENT_LINES = ["", "   ", "# Editable install with no version control (mypkg==0.1)", "## !! Could not determine repository location", "#"]
NOT_FREEZE_LINES = [
    "--index-url=https://evil.invalid/simple",
    "-i https://evil.invalid/simple",
    "--extra-index-url https://evil.invalid",
    "-e --pre",
    "-e",
    "torch==1.0 --hash=sha256:00",
    "@ file:///x.whl",
    "tinypkg @",
    "; rm -rf ~",
    "name==1.0; rm -rf ~",
    "$(touch PWNED)",
    "name==1.0 && touch PWNED",
]


@pytest.mark.parametrize("line, key, args", FREEZE_FORMS, ids=[form[0][:40] for form in FREEZE_FORMS])
def test_every_freeze_form_is_one_requirement(line, key, args):
    parsed = parse(line)
    assert (parsed.key, parsed.args) == (key, args)


@pytest.mark.parametrize("line", COMMENT_LINES)
def test_comment_lines_name_nothing(line):
    assert parse(line) is None


@pytest.mark.parametrize("line", NOT_FREEZE_LINES)
def test_options_and_shell_words_are_not_freeze_lines(line):
    with pytest.raises(ValueError):
        parse(line)


def url_record(folder: Path, lines: Sequence[str], installer: Installer = Installer("pip", PY)) -> records.Record:
    return records.Record(folder, "2026-11-22T15:00:00+00:00", installer, tuple(lines), ())


def test_an_unchanged_url_install_is_not_reinstalled(tmp_path):
    lines = [f"tinypkg @ {WHEEL_URL}", "-e git+https://github.com/o/repo@0123abcd#egg=repo", "filelock==3.13.1"]
    plan = restore_plan(url_record(tmp_path, lines), lines)
    assert not plan.changes


def test_a_removed_url_install_is_reinstalled_as_one_argument(tmp_path):
    lines = [f"tinypkg @ {WHEEL_URL}", "-e /src/my pkg", "-e git+https://github.com/o/repo@0123abcd#egg=repo", "filelock==3.13.1"]
    now = ["filelock==3.13.1", "repo==2.0", "added @ file:///tmp/added-1.0-py3-none-any.whl"]
    remove, install = restore_plan(url_record(tmp_path, lines), now).steps
    assert remove.argv == (PY, "-m", "pip", "uninstall", "-y", "added")
    assert install.argv == (
        PY, "-m", "pip", "install", "--no-deps",
        f"tinypkg @ {WHEEL_URL}", "-e", "/src/my pkg", "-e", "git+https://github.com/o/repo@0123abcd#egg=repo",
    )


def test_apply_refuses_to_record_a_freeze_it_could_not_restore(tmp_path):
    """The installer is a script printing an option among its freeze lines: nothing is recorded or run."""
    installer_script = tmp_path / "python"
    installer_script.write_text("#!/bin/sh\nprintf 'filelock==3.13.1\\n--index-url=https://evil.invalid\\n'\n")
    installer_script.chmod(0o755)
    with pytest.raises(FixError, match=r"cannot record the environment of .*: its freeze/1 is not a requirement line .*nothing was changed"):
        records.take(Installer("pip", str(installer_script)), (), None, tmp_path / "reports")
    assert not (tmp_path / "reports").exists()


# ---------------------------------------------------------------------------------------------- damaged records

def valid_record() -> dict:
    """A record as `fix --apply` writes it, with a plan, freeze lines of every form and an outcome."""
    installer = Installer("pip", PY)
    plan = Plan("mixed-wheels", "Keep one NVIDIA wheel family", PY, "pip", (
        Step(StepKind.UNINSTALL, "Remove cu11", "not needed", StepStatus.PLANNED, installer.uninstall(["nvidia-cuda-runtime-cu11"])),
    ))
    lines = [line for line, _, _ in FREEZE_FORMS] + COMMENT_LINES[2:]
    distributions = ({"name": "torch", "version": "2.3.1+cu121", "location": "/envs/hostile/lib/python3.11/site-packages"},)
    record = records.Record(Path("/unused"), "2026-11-22T15:00:00+00:00", installer, tuple(lines), distributions, plan, {"outcome": "applied"})
    return record.to_json()


# Where a value sits in a record -> the JSON types it may have there (none: an enum of strings).
TYPED_KEYS = {
    ("created",): {"string"},
    ("installer",): {"object"},
    ("installer", "name"): set(),
    ("installer", "python"): {"string"},
    ("installer", "uv"): {"string", "null"},
    ("freeze",): {"array"},
    ("freeze", 0): {"string"},
    ("distributions",): {"array"},
    ("distributions", 0): {"object"},
    ("distributions", 0, "name"): {"string", "null"},
    ("plan",): {"object", "null"},
    ("plan", "steps"): {"array"},
    ("plan", "steps", 0, "kind"): set(),
    ("plan", "steps", 0, "argv"): {"array"},
    ("outcome",): {"object", "null"},
}
WRONG_VALUES = {"string": "x", "number": 7, "boolean": True, "null": None, "array": ["x"], "object": {"x": 1}}
REQUIRED_KEYS = [("created",), ("installer",), ("freeze",), ("distributions",), ("installer", "name"), ("installer", "python"), ("plan", "steps")]
HUGE = "x" * 2 ** 20


def key_name(path) -> str:
    return "/".join(str(part) for part in path)


def changed(path, value) -> dict:
    document = valid_record()
    *parents, last = path
    holder = document
    for part in parents:
        holder = holder[part]
    holder[last] = value
    return document


def removed(path) -> dict:
    document = valid_record()
    *parents, last = path
    holder = document
    for part in parents:
        holder = holder[part]
    del holder[last]
    return document


def wrong_types() -> Iterator:
    for path, allowed in TYPED_KEYS.items():
        for type_name, value in WRONG_VALUES.items():
            if type_name not in allowed:
                yield pytest.param(changed(path, value), key_name(path), id=f"{key_name(path)}={type_name}")


def missing_keys() -> Iterator:
    for path in REQUIRED_KEYS:
        yield pytest.param(removed(path), f"{key_name(path)} is missing", id=f"without-{key_name(path)}")


def hostile_values() -> Iterator:
    cases = {
        "huge-created": (("created",), HUGE, "created is longer than"),
        "huge-python": (("installer", "python"), "/" + HUGE, "installer/python is longer than"),
        "huge-freeze-line": (("freeze", 0), "x==" + HUGE, "freeze/0 is longer than 8192 characters"),
        "too-many-lines": (("freeze",), ["x==1"] * 10001, "freeze has more than 10000 entries"),
        "too-many-distributions": (("distributions",), [{}] * 10001, "distributions has more than 10000 entries"),
        "empty-python": (("installer", "python"), "", "installer/python is empty"),
        "python-with-newline": (("installer", "python"), "/bin/sh\ntouch PWNED", "installer/python contains control characters"),
        "escape-in-created": (("created",), "\x1b[2J\x1b]0;owned\x07", "created contains control characters"),
        "c1-csi-in-freeze": (("freeze", 0), "torch==1.0\u009b31m", "freeze/0 contains control characters"),
        "escape-in-url": (("freeze", 0), "x @ file:///tmp/\x1b[31mred.whl", "freeze/0 contains control characters"),
        "installer-conda": (("installer", "name"), "conda", 'installer/name must be "pip" or "uv"'),
        "installer-extra-key": (("installer", "argv"), ["/bin/sh", "-c", "touch PWNED"], "installer has keys a record does not have"),
        "freeze-as-string": (("freeze",), "pip==24.0\nsetuptools==69.0", "freeze must be array, not string"),
        "moved-package-without-why": (("plan", "versions"), [{"name": "stable-baselines3", "installed": "2.7.0"}], "plan/versions/0/why is missing"),
        "moved-package-as-text": (("plan", "versions"), ["stable-baselines3==2.3.2"], "plan/versions/0 must be object, not string"),
    }
    for name, (path, value, message) in cases.items():
        yield pytest.param(changed(path, value), message, id=name)
    for number, line in enumerate(NOT_FREEZE_LINES):
        yield pytest.param(changed(("freeze", 1), line), "freeze/1 is not a requirement line", id=f"freeze-line-{number}")


def write_record(folder: Path, document) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "record.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


def test_the_valid_record_loads(tmp_path):
    loaded = records.load(write_record(tmp_path, valid_record()))
    assert loaded.freeze[3] == f"tinypkg @ {WHEEL_URL}" and loaded.plan.steps[0].kind is StepKind.UNINSTALL


@pytest.mark.parametrize("document, message", [*wrong_types(), *missing_keys(), *hostile_values()])
def test_a_damaged_record_names_the_key(tmp_path, document, message):
    write_record(tmp_path, document)
    with pytest.raises(UsageError) as raised:
        records.load(tmp_path)
    text = str(raised.value)
    assert f"is a damaged envdoctor fix record: {message}" in text
    assert "\n" not in text and len(text) < 400


@pytest.mark.parametrize("document", [[], "envdoctor-fix-record", 7, None, {"kind": "something-else"}, {"schema_version": "1.0"}])
def test_what_is_not_a_record_says_so(tmp_path, document):
    write_record(tmp_path, document)
    with pytest.raises(UsageError, match="is not an envdoctor fix record"):
        records.load(tmp_path)


@pytest.mark.parametrize("raw", [b"{", b"\xff\xfe{}", b""])
def test_a_record_that_is_not_json(tmp_path, raw):
    (tmp_path / "record.json").write_bytes(raw)
    with pytest.raises(UsageError, match="is not JSON"):
        records.load(tmp_path)


# ---------------------------------------------------------------------------------------------- through the CLI

def marker_script(folder: Path) -> Path:
    """An executable that leaves a marker file when anything runs it."""
    script = folder / "evil-python"
    script.write_text(f"#!/bin/sh\ntouch {folder / 'PWNED'}\n")
    script.chmod(0o755)
    return script


def assert_one_line_error(run, *parts: str) -> None:
    assert run.returncode == 2, run
    assert run.stderr.startswith("envdoctor: error:") and "Traceback" not in run.stderr, run
    assert len(run.stderr.strip().splitlines()) == 1, run
    for part in parts:
        assert part in run.stderr, run


@pytest.mark.parametrize("path, value, message", [
    (("freeze",), "pip==24.0", "freeze must be array, not string"),
    (("freeze", 1), "--index-url=https://evil.invalid/simple", "freeze/1 is not a requirement line"),
    (("created",), None, "created must be string, not null"),
    (("installer", "uv"), 7, "installer/uv must be string or null"),
    (("plan", "steps"), "rm -rf ~", "plan/steps must be array, not string"),
])
def test_cli_refuses_a_damaged_record_before_running_anything(tmp_path, path, value, message):
    """The record's interpreter is a script leaving a marker; the user names it too, so only the check
    of the record stands between the command and running it."""
    script = marker_script(tmp_path)
    document = changed(path, value)
    document["installer"]["python"] = str(script)
    folder = write_record(tmp_path / "rec", document)
    run = run_envdoctor("fix", "--rollback", str(folder), "--python", str(script), "--yes", input="y\n", timeout=60)
    assert_one_line_error(run, f"damaged envdoctor fix record: {message}")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("python", ["script", "/bin/sh -c 'touch {marker}'", "sh"])
@pytest.mark.parametrize("yes", [True, False], ids=["yes", "prompt"])
def test_cli_never_runs_the_interpreter_a_record_names(tmp_path, python, yes):
    script = marker_script(tmp_path)
    document = valid_record()
    document["installer"]["python"] = str(script) if python == "script" else python.format(marker=tmp_path / "PWNED")
    folder = write_record(tmp_path / "rec", document)
    run = run_envdoctor("fix", "--rollback", str(folder), *(["--yes"] if yes else []), input="y\n", timeout=60)
    recorded = document["installer"]["python"]
    assert_one_line_error(run, f"records the environment of {recorded}, not {sys.executable}", "--python")
    assert not (tmp_path / "PWNED").exists()


def test_cli_refuses_a_fifo_as_the_record_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "record.json")
    for given in (tmp_path, tmp_path / "record.json"):
        run = run_envdoctor("fix", "--rollback", str(given), "--yes", input="", timeout=30)
        assert_one_line_error(run, "is not a regular file")


def test_cli_refuses_a_device_as_the_record(tmp_path):
    run = run_envdoctor("fix", "--rollback", "/dev/zero", "--yes", input="", timeout=30)
    assert_one_line_error(run, "/dev/zero is not a regular file")


def test_cli_refuses_a_folder_without_a_record(tmp_path):
    run = run_envdoctor("fix", "--rollback", str(tmp_path), "--yes", input="", timeout=30)
    assert_one_line_error(run, f"cannot read the record {tmp_path}")


# ---------------------------------------------------------------------------------------------- real venvs

def wheel_of_files(folder: Path, name: str, version: str, files: Dict[str, str]) -> Path:
    """A pure-Python wheel with `files` (path -> text), its metadata and a RECORD with real hashes."""
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    contents = dict(files)
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    contents[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return packed_wheel(folder / f"{stem}-py3-none-any.whl", info, contents, hashed=True)


def fake_stack(folder: Path) -> list:
    """Two NVIDIA runtime families nothing needs, a torch that cannot be imported, and a plain package."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        wheel_of_files(folder, "nvidia-cuda-runtime-cu11", "11.7.99", {"nvidia/cuda_runtime_cu11_marker.py": ""}),
        wheel_of_files(folder, "nvidia-cuda-runtime-cu12", "12.1.105", {"nvidia/cuda_runtime_cu12_marker.py": ""}),
        wheel_of_files(folder, "torch", "2.13.0", {"torch/__init__.py": "raise ImportError('a torch that never imports')\n"}),
        wheel_of_files(folder, "tinypkg", "1.0", {"tinypkg/__init__.py": "VALUE = 1\n"}),
    ]


def url_venv(venvs, tmp_path_factory, installer: str) -> Path:
    """A real venv whose packages were installed from file:// URLs; pip's venv has pip, uv's has nothing."""
    name = f"fix-hostile-{installer}"
    if name in venvs.built:
        return venvs.built[name]
    wheels = fake_stack(tmp_path_factory.mktemp(f"wheels with space {installer}"))
    python = venvs.get(name, with_pip=installer == "pip")
    pip(["install", "-q", "--no-index", "--no-deps", *(w.as_uri() for w in wheels)], python)
    return python


def freeze(python: Path, installer: str) -> str:
    argv = [str(python), "-m", "pip", "freeze", "--all"] if installer == "pip" else [str(Path(sys.executable).with_name("uv")), "pip", "freeze", "--python", str(python)]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


OFFLINE = {"PIP_NO_INDEX": "1", "UV_OFFLINE": "1", **UV_ON_PATH}


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_url_installs_are_restored_after_a_failed_apply_and_by_rollback(venvs, tmp_path_factory, tmp_path, installer):
    python = url_venv(venvs, tmp_path_factory, installer)
    frozen = freeze(python, installer)
    assert "nvidia-cuda-runtime-cu11 @ file:///" in frozen and "tinypkg @ file:///" in frozen

    run = run_envdoctor("fix", "--mixed-wheels", "--python", str(python), "--installer", installer, "--apply", "--yes", "--json", "-", env=OFFLINE, cwd=tmp_path)
    assert run.returncode == 1, run
    result = run.json()["result"]
    assert result["outcome"] == "rolled-back" and result["message"].startswith("verification failed"), result
    assert result["rollback"]["outcome"] == "restored", result
    assert freeze(python, installer) == frozen
    (record,) = (tmp_path / "reports").glob("fix-*")
    assert "nvidia-cuda-runtime-cu12 @ file:///" in (record / "freeze.txt").read_text()

    other = run_envdoctor("fix", "--rollback", str(record), "--yes", env=OFFLINE, cwd=tmp_path)
    assert_one_line_error(other, f"records the environment of {python}, not {sys.executable}", f"--python {python}")
    assert freeze(python, installer) == frozen

    pip(["uninstall", "-q", "-y", "tinypkg", "nvidia-cuda-runtime-cu12"], python)
    assert "tinypkg" not in freeze(python, installer)
    undo = run_envdoctor("fix", "--rollback", str(record), "--python", str(python), "--yes", env=OFFLINE, cwd=tmp_path)
    assert undo.returncode == 0, undo
    assert "restored the environment" in undo.stdout
    assert freeze(python, installer) == frozen


def assert_no_answer(run) -> None:
    """The one-line error, after the question when it could still be asked (input at its end, not closed)."""
    assert run.returncode == 2, run
    *question, error = run.stderr.splitlines()
    assert error.startswith(NO_ANSWER) and "Traceback" not in run.stderr, run
    assert all(line.startswith("Carry out ") for line in question) and len(question) <= 1, run


def run_without_answer(args: Sequence[str], stdin: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI with standard input at its end (/dev/null) or closed altogether (`0<&-`)."""
    env = {**os.environ, "NO_COLOR": "1", **OFFLINE}
    argv = [sys.executable, "-m", "envdoctor", *args]
    if stdin == "closed":
        argv = ["sh", "-c", 'exec "$@" 0<&-', "sh", *argv]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("stdin", ["dev-null", "closed"])
def test_no_answer_at_a_prompt_changes_nothing(venvs, tmp_path_factory, tmp_path, stdin):
    python = url_venv(venvs, tmp_path_factory, "uv")
    frozen = freeze(python, "uv")

    apply = run_without_answer(["fix", "--mixed-wheels", "--python", str(python), "--apply"], stdin, tmp_path)
    assert_no_answer(apply)
    assert not (tmp_path / "reports").exists()

    document = valid_record()
    document["installer"] = {"name": "uv", "python": str(python), "uv": None}
    document["freeze"] = [line for line in frozen.splitlines() if not line.startswith("tinypkg")]
    folder = write_record(tmp_path / "rec", document)
    rollback = run_without_answer(["fix", "--rollback", str(folder), "--python", str(python)], stdin, tmp_path)
    assert_no_answer(rollback)
    assert freeze(python, "uv") == frozen

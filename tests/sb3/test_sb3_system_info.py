"""system_info.txt as SB3 writes it, as nothing writes it, and not there at all: each told for what it is."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Optional

import pytest

from conftest import run_envdoctor
from envdoctor.sb3 import system_info

GENUINE = "- OS: Linux-6.8.0-x86_64 #1 SMP\n- Python: 3.11.7\n- Stable-Baselines3: 2.9.2\n- PyTorch: 2.13.0+cpu\n- GPU Enabled: False\n- Numpy: 2.4.6\n"
ABSURD = {
    "binary": "\x00\x01\x02\xff" * 1000,
    "no-labels": "just some words\nand more words\n",
    "json": '{"python": "3.11.7"}',
    "unknown-labels": "- Favourite colour: blue\n- Mood: fine\n",
}


def model(path: Path, info: Optional[str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", '{"n_envs": 1}')
        archive.writestr("_stable_baselines3_version", "2.9.2")
        if info is not None:
            archive.writestr("system_info.txt", info)
    return path


def saved_with_line(tmp_path: Path, info: Optional[str]) -> str:
    run = run_envdoctor("inspect", str(model(tmp_path / "model.zip", info)), cwd=tmp_path)
    assert run.returncode in (0, 1), run
    return run.stdout


def test_a_genuine_file_names_what_saved_the_model():
    assert system_info.parse(GENUINE)["python"] == "3.11.7" and "unrecognised" not in system_info.parse(GENUINE)


@pytest.mark.parametrize("kind", list(ABSURD))
def test_an_absurd_file_is_reported_as_unrecognised_not_as_missing(tmp_path, kind):
    out = saved_with_line(tmp_path, ABSURD[kind])
    assert "system_info.txt unrecognised (" in out and "no system_info.txt" not in out


def test_a_model_without_the_file_says_it_has_none(tmp_path):
    out = saved_with_line(tmp_path, None)
    assert "no system_info.txt (SB3 older than 1.2?)" in out

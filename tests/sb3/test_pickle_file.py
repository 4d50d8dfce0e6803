"""Pickle and torch files that are not SB3 archives (sb3/pickle_file.py): each pickle in them judged like an
SB3 entry, read symbolically, never unpickled; real files written by pickle, cloudpickle and torch.save."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import cloudpickle
import pytest

from envdoctor.sb3.archive import ModelFileError
from envdoctor.sb3.models_section import models_facts
from envdoctor.sb3.pickle_file import inspect_file

PWNED = "envdoctor-pickle-file-test-ran-code"


def linear(initial):
    def schedule(progress):
        return progress * initial
    return schedule


def test_a_cloudpickled_closure_in_a_pkl_is_code_and_says_which_python_wrote_it(tmp_path):
    path = tmp_path / "schedule.pkl"
    path.write_bytes(cloudpickle.dumps(linear(3e-4)))
    facts = inspect_file(path)
    assert facts["kind"] == "pickle" and facts["path"] == str(path)
    [entry] = facts["entries"]
    assert entry["verdict"] == "code"
    [function] = entry["functions"]
    assert function["qualname"].endswith("schedule")
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in (function.get("producer_minor") or function["python_guess"])


def test_plain_data_in_a_pickle_is_data_and_a_cut_pickle_is_corrupt(tmp_path):
    data = tmp_path / "stats.pickle"
    data.write_bytes(pickle.dumps({"mean": [0.5, 1.5], "count": 3}))
    assert [e["verdict"] for e in inspect_file(data)["entries"]] == ["data"]
    cut = tmp_path / "cut.pkl"
    cut.write_bytes(pickle.dumps(list(range(100)))[:40])
    assert [e["verdict"] for e in inspect_file(cut)["entries"]] == ["corrupt"]


def test_a_pickle_that_would_run_a_command_is_dangerous_and_nothing_runs(tmp_path):
    class Evil:
        def __reduce__(self):
            return (subprocess.call, (["touch", str(tmp_path / PWNED)],))

    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(Evil()))
    assert [e["verdict"] for e in inspect_file(path)["entries"]] == ["dangerous"]
    assert not (tmp_path / PWNED).exists()


def test_a_pickle_that_cannot_be_read_is_left_out_and_a_zip_that_is_no_model_is_refused(tmp_path):
    assert inspect_file(tmp_path / "gone.pkl") is None
    (tmp_path / "notes.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    with pytest.raises(ModelFileError):
        inspect_file(tmp_path / "notes.zip")


@pytest.mark.slow
def test_a_torch_checkpoint_is_read_through_its_data_pkl(tmp_path):
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""\
        import torch
        torch.save({{"policy": torch.nn.Linear(4, 2).state_dict(), "step": 7}}, {str(tmp_path / "weights.pt")!r})
        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = lambda x: 2 * x
        import cloudpickle
        torch.save(Head(), {str(tmp_path / "model.pth")!r}, pickle_module=cloudpickle)
        """)], check=True, timeout=120)
    weights = inspect_file(tmp_path / "weights.pt")
    assert weights["kind"] == "torch" and weights["members"] == ["weights/data.pkl"]
    assert [e["verdict"] for e in weights["entries"]] == ["data"]
    model = inspect_file(tmp_path / "model.pth")
    assert model["kind"] == "torch"
    [entry] = model["entries"]
    assert entry["verdict"] in ("code", "dangerous")
    assert any(f["qualname"].endswith("<lambda>") for f in entry["functions"])


def test_the_target_interpreter_is_asked_only_when_a_file_needs_it(tmp_path):
    data, code = tmp_path / "stats.pkl", tmp_path / "schedule.pkl"
    data.write_bytes(pickle.dumps({"mean": [0.5, 1.5]}))
    code.write_bytes(cloudpickle.dumps(linear(3e-4)))
    plain = models_facts(sys.executable, [data])
    assert [f["path"] for f in plain["files"]] == [str(data)] and plain["target"] == {}
    assert models_facts(sys.executable, [data, code])["target"]["python"]["version"].startswith(f"{sys.version_info[0]}.{sys.version_info[1]}")

"""CPU instruction and memory checks: real /proc files under ENVDOCTOR_ROOT, recorded facts with --from."""

import json
import os
import sys

from conftest import assert_checks_ran, findings_by_id, write_host_root

V2_AND_AVX2 = "fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt cx16 lahf_lm avx avx2 fma"


def cpuinfo(flags):
    return f"processor\t: 0\nmodel name\t: QEMU Virtual CPU version 2.5+\nflags\t\t: {flags}\n\n"


def cpu_findings(envdoctor, tmp_path, flags):
    root = write_host_root(tmp_path / "root", {"/proc/cpuinfo": cpuinfo(flags)})
    run = envdoctor("check", "--no-save", "--only", "cpu", "--json", "-", env={"ENVDOCTOR_ROOT": str(root)})
    assert_checks_ran(run.json(), "cpu")
    return run, findings_by_id(run.json()).get("cpu.missing-instructions", [])


def test_a_kvm64_cpu_cannot_import_numpy_2_4(envdoctor, tmp_path):
    run, found = cpu_findings(envdoctor, tmp_path, "fpu sse sse2 avx")  # the dev environment has numpy >= 2.4
    numpy = [f for f in found if "NumPy" in f["title"]]
    assert numpy and numpy[0]["severity"] == "error"
    assert set(numpy[0]["evidence"]["missing_flags"]) == {"pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "cx16", "lahf_lm"}
    assert numpy[0]["remedies"][0]["command"] == f"{os.path.abspath(sys.executable)} -m pip install 'numpy<2.4'"  # the diagnosed interpreter's pip, named as the doctor names it
    assert run.returncode == 1


def test_no_avx2_means_torch_default_kernels(envdoctor, tmp_path):
    _, found = cpu_findings(envdoctor, tmp_path, "fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt cx16 lahf_lm avx")
    (finding,) = found
    assert finding["severity"] == "warning"
    assert finding["evidence"]["missing_flags"] == ["avx2", "fma"]
    assert "ATEN_CPU_CAPABILITY=default" in finding["remedies"][0]["command"]


def test_no_avx_is_a_sigill_risk(envdoctor, tmp_path):
    _, found = cpu_findings(envdoctor, tmp_path, "fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt cx16 lahf_lm")
    (finding,) = found
    assert finding["severity"] == "error"
    assert "SIGILL" in finding["title"]


def test_a_modern_cpu_passes(envdoctor, tmp_path):
    _, found = cpu_findings(envdoctor, tmp_path, V2_AND_AVX2)
    assert found == []


def recorded(envdoctor, tmp_path, **memory):
    """A real report of this machine, with its memory facts replaced as another machine would record them."""
    path = tmp_path / "recorded.json"
    assert envdoctor("check", "--no-save", "--no-probe", "--json", str(path)).returncode in (0, 1)
    report = json.loads(path.read_text())
    report["facts"]["memory"].update(memory)
    path.write_text(json.dumps(report))
    return path


def test_docker_default_shm_breaks_dataloader_workers(envdoctor, judged, tmp_path):
    path = recorded(envdoctor, tmp_path, shm_total_bytes=64 * 2**20)
    (finding,) = findings_by_id(judged(path, only="memory"))["memory.shm-small"]
    assert finding["severity"] == "warning"
    assert "64 MiB" in finding["title"]
    assert "docker run --shm-size=8g ..." in [r["command"] for r in finding["remedies"]]


def test_a_machine_without_dev_shm_is_told_so(envdoctor, tmp_path):
    """Under ENVDOCTOR_ROOT a Linux /proc but no dev/shm: what a container started without one sees."""
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "meminfo").write_text("MemTotal:       16384000 kB\nMemAvailable:    8192000 kB\nSwapTotal:             0 kB\n")
    run = envdoctor("check", "--no-save", "--no-probe", "--only", "memory", "--json", str(tmp_path / "r.json"), env={"ENVDOCTOR_ROOT": str(root)})
    assert run.returncode in (0, 1), run
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["facts"]["memory"]["shm_unreadable"] == "No such file or directory"
    (finding,) = findings_by_id(report)["memory.shm-small"]
    assert finding["title"] == "/dev/shm cannot be used (No such file or directory): DataLoader workers cannot share tensors"
    assert "docker run --shm-size=8g ..." in [r["command"] for r in finding["remedies"]]


def test_a_recorded_report_without_the_reason_gives_no_shm_finding(envdoctor, judged, tmp_path):
    path = recorded(envdoctor, tmp_path, shm_total_bytes=None, shm_free_bytes=None)
    assert "memory.shm-small" not in findings_by_id(judged(path, only="memory", skipped="memory.shm-small"))


def test_small_ram_and_no_swap(envdoctor, judged, tmp_path):
    path = recorded(envdoctor, tmp_path, ram_total_bytes=4 * 2**30, swap_total_bytes=0)
    (finding,) = findings_by_id(judged(path, ran="memory"))["memory.low-ram"]
    assert finding["severity"] == "warning"
    assert "4.0 GiB" in finding["title"]


def test_ample_memory_is_quiet(envdoctor, judged, tmp_path):
    path = recorded(envdoctor, tmp_path, ram_total_bytes=64 * 2**30, swap_total_bytes=8 * 2**30, shm_total_bytes=32 * 2**30)
    found = findings_by_id(judged(path, ran="memory"))
    assert not [i for i in found if i.startswith("memory.")]


def test_a_failed_collector_is_a_finding_and_its_checks_are_skipped(envdoctor, judged, tmp_path):
    path = tmp_path / "recorded.json"
    envdoctor("check", "--no-save", "--no-probe", "--json", str(path))
    report = json.loads(path.read_text())
    report["facts"]["memory"] = {"error": "OSError: [Errno 13] Permission denied: '/proc/meminfo'"}
    path.write_text(json.dumps(report))
    rejudged = judged(path, ran="doctor.collector-failed", skipped="memory")
    (finding,) = findings_by_id(rejudged)["doctor.collector-failed"]
    assert finding["evidence"] == {"collector": "memory"}
    assert "Permission denied" in finding["explanation"]
    skipped = {c["id"]: c["status"] for c in rejudged["checks"] if c["id"].startswith("memory.")}
    assert skipped == {"memory.shm-small": "skipped", "memory.low-ram": "skipped"}
    terminal = envdoctor("check", "--from", str(path)).stdout
    assert "The memory facts could not be gathered" in terminal
    assert "[-] Memory" in terminal  # not checked is not passed: the domain says so in the default view too

"""Thread checks, with the variables set in the environment envdoctor runs in."""

import pytest

from conftest import assert_checks_ran, findings_by_id, write_host_root

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "KMP_DUPLICATE_LIB_OK")


def many_core_root(tmp_path, processors=128):
    cpuinfo = "".join(f"processor\t: {n}\nmodel name\t: AMD EPYC 9754 128-Core Processor\nflags\t\t: fpu sse2 avx avx2 fma\n\n" for n in range(processors))
    return write_host_root(tmp_path / "root", {"/proc/cpuinfo": cpuinfo})


def threads_report(envdoctor, env, **kwargs):
    run = envdoctor("check", "--no-save", "--no-probe", "--only", "threads", "--json", "-", env=env, unset=THREAD_VARIABLES, **kwargs)
    assert run.returncode == 0, run
    assert_checks_ran(run.json(), "threads", skipped="threads.multiple-openmp")  # --no-probe: nothing loaded measured
    return findings_by_id(run.json())


def test_thread_variables_above_the_usable_cpus_are_oversubscription(envdoctor):
    found = threads_report(envdoctor, {"OMP_NUM_THREADS": "64", "MKL_NUM_THREADS": "1"})
    (finding,) = found["threads.oversubscribed"]
    assert finding["severity"] == "warning"
    assert finding["evidence"]["variables"] == {"OMP_NUM_THREADS": "64"}
    usable = finding["evidence"]["usable_cpus"]
    assert f"OMP_NUM_THREADS={usable}" in finding["remedies"][0]["command"]


def test_nested_openmp_counts_use_the_outer_level(envdoctor):
    found = threads_report(envdoctor, {"OMP_NUM_THREADS": "512,4"})
    assert found["threads.oversubscribed"][0]["evidence"]["variables"] == {"OMP_NUM_THREADS": "512,4"}


def test_values_the_libraries_ignore_are_reported(envdoctor):
    found = threads_report(envdoctor, {"OPENBLAS_NUM_THREADS": "auto", "OMP_NUM_THREADS": "0"})
    (finding,) = found["threads.oversubscribed"]
    assert finding["evidence"]["variables"] == {"OMP_NUM_THREADS": "0", "OPENBLAS_NUM_THREADS": "auto"}
    assert "ignore" in finding["title"] and "was not measured" in finding["explanation"]


@pytest.mark.slow
def test_an_invalid_value_keeps_what_libgomp_said_and_what_the_probe_measured(envdoctor):
    run = envdoctor("check", "--no-save", "--only", "threads", "--json", "-", env={"OMP_NUM_THREADS": "0", "MKL_NUM_THREADS": "abc"}, unset=THREAD_VARIABLES)
    assert run.returncode == 0, run
    (finding,) = findings_by_id(run.json())["threads.oversubscribed"]
    assert finding["evidence"]["variables"] == {"OMP_NUM_THREADS": "0", "MKL_NUM_THREADS": "abc"}
    assert finding["evidence"]["library_messages"] == ["libgomp: Invalid value for environment variable OMP_NUM_THREADS"]
    measured = finding["evidence"]["measured_threads"]
    assert f"torch {measured['torch']}" in finding["explanation"] and "one thread per core" not in finding["explanation"]


def test_limits_within_the_cpus_are_quiet(envdoctor):
    assert "threads.oversubscribed" not in threads_report(envdoctor, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"})


def test_kmp_duplicate_lib_ok_is_a_red_flag(envdoctor):
    (finding,) = threads_report(envdoctor, {"KMP_DUPLICATE_LIB_OK": "TRUE"})["threads.kmp-duplicate-lib-ok"]
    assert finding["severity"] == "warning"
    assert finding["evidence"] == {"KMP_DUPLICATE_LIB_OK": "TRUE"}
    assert "unset KMP_DUPLICATE_LIB_OK" in finding["remedies"][0]["command"]


def test_kmp_duplicate_lib_ok_false_is_not(envdoctor):
    assert "threads.kmp-duplicate-lib-ok" not in threads_report(envdoctor, {"KMP_DUPLICATE_LIB_OK": "FALSE"})


def test_many_cores_without_limits_get_the_info_and_the_openblas_cap(envdoctor, tmp_path):
    root = many_core_root(tmp_path)
    found = threads_report(envdoctor, {"ENVDOCTOR_ROOT": str(root)})
    (unlimited,) = found["threads.unlimited"]
    assert unlimited["severity"] == "info"
    assert unlimited["evidence"] == {"usable_cpus": 128}
    (openblas,) = found["threads.openblas-limit"]
    assert openblas["severity"] == "warning"
    assert "numpy" in openblas["evidence"]["openblas_users"]
    assert openblas["remedies"][0]["command"] == "export OPENBLAS_NUM_THREADS=64"


def test_a_cgroup_quota_limits_the_usable_cpus(envdoctor, tmp_path):
    root = many_core_root(tmp_path)
    (root / "sys/fs/cgroup").mkdir(parents=True)
    (root / "sys/fs/cgroup/cpu.max").write_text("400000 100000\n")
    found = threads_report(envdoctor, {"ENVDOCTOR_ROOT": str(root), "OMP_NUM_THREADS": "16"})
    assert found["threads.oversubscribed"][0]["evidence"]["usable_cpus"] == 4
    assert "threads.unlimited" not in found

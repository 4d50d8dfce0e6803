"""WSL detection through the CLI, from real /proc strings of WSL1, WSL2 (stock and custom) and native Linux."""

import pytest

from conftest import assert_checks_ran, findings_by_id, write_host_root

WSL1 = {
    "/proc/sys/kernel/osrelease": "4.4.0-19041-Microsoft\n",
    "/proc/version": "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #1237-Microsoft Sat Sep 11 14:32:00 PST 2021\n",
    "/proc/sys/fs/binfmt_misc/WSLInterop": "enabled\n",
}
WSL2 = {
    "/proc/sys/kernel/osrelease": "5.15.153.1-microsoft-standard-WSL2\n",
    "/proc/version": "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 12.2.0, GNU ld (GNU Binutils) 2.40) #1 SMP Fri Mar 29 23:14:13 UTC 2024\n",
    "/usr/lib/wsl/lib/libcuda.so.1": "",
    "/dev/dxg": "",
}
WSL2_EARLY = {
    "/proc/sys/kernel/osrelease": "4.19.104-microsoft-standard\n",
    "/proc/version": "Linux version 4.19.104-microsoft-standard (oe-user@oe-host) (gcc version 8.2.0 (GCC)) #1 SMP Wed Feb 19 06:37:35 UTC 2020\n",
    "/dev/dxg": "",
}
WSL2_CUSTOM = {
    "/proc/sys/kernel/osrelease": "6.6.36-gentoo-dist\n",
    "/proc/version": "Linux version 6.6.36-gentoo-dist (root@build) (gcc (Gentoo 13.2.1_p20240210 p14) 13.2.1, GNU ld 2.42) #1 SMP PREEMPT_DYNAMIC Sat Jul 6 12:00:00 UTC 2024\n",
    "/usr/lib/wsl/lib/": "",
    "/dev/dxg": "",
}
NATIVE = {
    "/proc/sys/kernel/osrelease": "6.1.0-18-amd64\n",
    "/proc/version": "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)\n",
}
WSL_VARIABLES = ("WSL_DISTRO_NAME", "WSL_INTEROP")


def check_under(envdoctor, tmp_path, files, **env):
    root = write_host_root(tmp_path / "root", files)
    run = envdoctor("check", "--no-save", "--only", "wsl", "--json", "-", env={"ENVDOCTOR_ROOT": str(root), **env}, unset=WSL_VARIABLES)
    assert run.returncode in (0, 1), run
    assert_checks_ran(run.json(), "wsl")
    return run, findings_by_id(run.json())


def test_wsl1_is_an_error_for_cuda_work(envdoctor, tmp_path):
    run, found = check_under(envdoctor, tmp_path, WSL1, WSL_DISTRO_NAME="Ubuntu")
    (finding,) = found["wsl.kernel"]
    assert finding["severity"] == "error"
    assert "WSL1" in finding["title"]
    assert any("wsl --set-version" in (r["command"] or "") and r["kind"] == "powershell" for r in finding["remedies"])
    assert run.returncode == 1
    root = write_host_root(tmp_path / "again", WSL1)
    shown = envdoctor("check", "--no-save", "--only", "wsl", env={"ENVDOCTOR_ROOT": str(root), "WSL_DISTRO_NAME": "Ubuntu"}, unset=WSL_VARIABLES).stdout
    assert "PS> wsl --set-version" in shown and "$ wsl" not in shown  # a Windows command, not a line for bash


@pytest.mark.parametrize("files", [WSL2, WSL2_EARLY], ids=["wsl2", "wsl2-early-kernel"])
def test_stock_wsl2_kernels_get_the_windows_driver_advice(envdoctor, tmp_path, files):
    run, found = check_under(envdoctor, tmp_path, files, WSL_DISTRO_NAME="Ubuntu", WSL_INTEROP="/run/WSL/1_interop")
    (finding,) = found["wsl.kernel"]
    assert finding["severity"] == "info"
    assert "custom" not in finding["title"]
    assert "Never install a Linux NVIDIA driver" in finding["explanation"]
    assert "pin_memory=False" in finding["explanation"]
    assert "wsl.linux-driver-inside" not in found
    assert run.returncode == 0


def test_custom_wsl2_kernel_is_recognised_from_the_other_markers(envdoctor, tmp_path):
    _, found = check_under(envdoctor, tmp_path, WSL2_CUSTOM, WSL_DISTRO_NAME="Gentoo", WSL_INTEROP="/run/WSL/7_interop")
    (finding,) = found["wsl.kernel"]
    assert "custom kernel" in finding["title"]
    assert "/dev/dxg" in finding["evidence"]["markers"]
    assert "WSL_INTEROP" in finding["evidence"]["markers"]


def test_wsl2_without_the_gpu_device_warns(envdoctor, tmp_path):
    files = {k: v for k, v in WSL2.items() if k != "/dev/dxg"}
    _, found = check_under(envdoctor, tmp_path, files, WSL_DISTRO_NAME="Ubuntu")
    (finding,) = found["wsl.kernel"]
    assert finding["severity"] == "warning"
    assert "/dev/dxg is missing" in finding["explanation"]


def test_native_linux_has_no_wsl_findings(envdoctor, tmp_path):
    _, found = check_under(envdoctor, tmp_path, NATIVE)
    assert not [i for i in found if i.startswith("wsl.")]


def test_a_linux_driver_inside_wsl2_is_an_error_naming_the_library(envdoctor, tmp_path):
    files = {**WSL2, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05": "", "/usr/lib/x86_64-linux-gnu/libcuda.so.1": ""}
    run, found = check_under(envdoctor, tmp_path, files, WSL_DISTRO_NAME="Ubuntu")
    (finding,) = found["wsl.linux-driver-inside"]
    assert finding["severity"] == "error"
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in finding["evidence"]["libcuda_outside_wsl"]
    assert any(r["command"] and r["command"].startswith("dpkg -S /usr/lib/x86_64-linux-gnu/libcuda.so") for r in finding["remedies"])
    assert run.returncode == 1


def test_the_same_libcuda_on_native_linux_is_fine(envdoctor, tmp_path):
    _, found = check_under(envdoctor, tmp_path, {**NATIVE, "/usr/lib/x86_64-linux-gnu/libcuda.so.1": ""})
    assert "wsl.linux-driver-inside" not in found


CONTAINER_ON_NATIVE = {**NATIVE, "/.dockerenv": ""}


@pytest.mark.parametrize("files", [NATIVE, CONTAINER_ON_NATIVE], ids=["native", "container-on-native"])
@pytest.mark.parametrize("variables", [{"WSL_DISTRO_NAME": "Ubuntu"}, {"WSL_INTEROP": "/run/WSL/1_interop"}, {"WSL_DISTRO_NAME": "Ubuntu", "WSL_INTEROP": "/run/WSL/9_interop"}], ids=["distro", "interop", "both"])
def test_wsl_variables_on_a_native_kernel_are_only_a_note(envdoctor, tmp_path, files, variables):
    run, found = check_under(envdoctor, tmp_path, files, **variables)
    (finding,) = found["wsl.kernel"]
    assert finding["severity"] == "info"
    assert "WSL2" not in finding["title"] and "not WSL's" in finding["title"]
    assert sorted(finding["evidence"]["variables"]) == sorted(variables)
    assert finding["evidence"]["kernel_release"] == "6.1.0-18-amd64"
    assert "wsl.linux-driver-inside" not in found
    assert run.returncode == 0


@pytest.mark.parametrize("marker", ["/usr/lib/wsl/", "/run/WSL/", "/proc/sys/fs/binfmt_misc/WSLInterop"])
def test_a_filesystem_marker_on_a_foreign_kernel_is_wsl2(envdoctor, tmp_path, marker):
    _, found = check_under(envdoctor, tmp_path, {**NATIVE, marker: "enabled\n" if not marker.endswith("/") else ""}, WSL_INTEROP="/run/WSL/1_interop")
    (finding,) = found["wsl.kernel"]
    assert "Running under WSL2 (custom kernel)" in finding["title"]


def test_the_kernel_alone_says_wsl_without_any_variable(envdoctor, tmp_path):
    _, found = check_under(envdoctor, tmp_path, {k: v for k, v in WSL2.items() if k.startswith("/proc")})
    (finding,) = found["wsl.kernel"]
    assert finding["title"].startswith("Running under WSL2:")

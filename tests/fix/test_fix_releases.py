"""Where a plan reads other releases: PyPI's JSON API (served here by a local HTTP server in PyPI's
shapes, per-release pages or only wheels' PEP 658 metadata files), a folder of wheels, or nowhere."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Iterator

import pytest
from packaging.version import Version

from envdoctor.fix.releases import OFFLINE, PyPIJson, WheelFolder
from helpers.local_wheels import write_wheel

METADATA = "Metadata-Version: 2.1\nName: stable-baselines3\nVersion: {v}\nRequires-Python: >=3.8\nRequires-Dist: torch>={t}\n\n"
RELEASES = {"2.7.0": "2.3", "2.3.2": "1.13", "2.4.0a1": "1.13"}


def serve(pages: Dict[str, bytes]) -> Iterator[str]:
    class Pages(BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/pypi"
    finally:
        server.shutdown()


def project_page(relative_files: bool) -> bytes:
    files = {v: [{"filename": f"stable_baselines3-{v}-py3-none-any.whl", "yanked": False,
                  "url": (f"../../files/sb3-{v}.whl" if relative_files else f"/files/sb3-{v}.whl")}] for v in RELEASES}
    files["2.6.0"] = [{"filename": "stable_baselines3-2.6.0-py3-none-any.whl", "yanked": True, "url": "/files/sb3-2.6.0.whl"}]
    return json.dumps({"info": {}, "releases": files}).encode()


@pytest.fixture
def pypi() -> Iterator[str]:
    pages = {"/pypi/stable-baselines3/json": project_page(False)}
    pages.update({f"/pypi/stable-baselines3/{v}/json": json.dumps({"info": {"requires_dist": [f"torch>={t}"], "requires_python": ">=3.8"}}).encode() for v, t in RELEASES.items()})
    yield from serve(pages)


@pytest.fixture
def mirror() -> Iterator[str]:
    """A mirror without per-release pages, with each wheel's metadata file beside it (PEP 658)."""
    pages = {"/pypi/stable-baselines3/json": project_page(True)}
    pages.update({f"/files/sb3-{v}.whl.metadata": METADATA.format(v=v, t=t).encode() for v, t in RELEASES.items()})
    yield from serve(pages)


@pytest.mark.parametrize("server", ["pypi", "mirror"])
def test_releases_newest_first_without_yanked_or_pre_releases_and_their_requirements(server, request):
    index = PyPIJson(request.getfixturevalue(server))
    assert index.versions("Stable_Baselines3") == [Version("2.7.0"), Version("2.3.2")]
    release = index.release("stable-baselines3", Version("2.3.2"))
    assert release.requires == ("torch>=1.13",) and release.requires_python == ">=3.8"
    assert index.versions("no-such-project") == []


def test_an_unreachable_index_answers_cannot_tell_and_stops_asking():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    index = PyPIJson(f"http://127.0.0.1:{port}/pypi", timeout_s=2)
    assert index.versions("stable-baselines3") is None and not index.reachable
    assert index.release("stable-baselines3", Version("2.3.2")) is None
    assert OFFLINE.versions("stable-baselines3") is None


def test_a_wheel_folder_reads_each_wheels_metadata(tmp_path):
    write_wheel(tmp_path, "sb3-contrib", "2.3.0", ["stable_baselines3>=2.3.0"], ">=3.8")
    (tmp_path / "notes.txt").write_text("not a wheel")
    (tmp_path / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    index = WheelFolder(tmp_path)
    assert index.versions("SB3_Contrib") == [Version("2.3.0")]
    assert index.release("sb3-contrib", Version("2.3.0")).requires == ("stable_baselines3>=2.3.0",)
    assert index.release("broken", Version("1.0")) is None and index.versions("absent") == []

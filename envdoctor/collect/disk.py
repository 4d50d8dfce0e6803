"""Disk facts: free space in the folders training writes to, so a full disk is found before a run
dies at its first checkpoint.

The folders are the working directory and those named in ENVDOCTOR_DISK_PATHS (separated by
os.pathsep). statvfs on a hung network mount never returns, so the sizes are asked in a child with a
time limit.
"""

from __future__ import annotations

import json
import os
import sys
from typing import List

from envdoctor.proc.children import run_child

PATHS_VARIABLE = "ENVDOCTOR_DISK_PATHS"
TIMEOUT_S = 10.0
MAX_FOLDERS = 32
STATVFS_SCRIPT = """
import json, os, sys

def measured(path):
    try:
        stat = os.statvfs(path)
    except OSError as error:
        return {"path": path, "error": error.strerror or str(error)}
    return {"path": path, "free_bytes": stat.f_frsize * stat.f_bavail, "total_bytes": stat.f_frsize * stat.f_blocks}

print(json.dumps([measured(path) for path in sys.argv[1:]]))
"""


def named_folders(environ) -> List[str]:
    """The working directory, then each named folder as an absolute path, each once, at most MAX_FOLDERS."""
    named = [os.path.abspath(os.path.expanduser(p)) for p in environ.get(PATHS_VARIABLE, "").split(os.pathsep) if p]
    return list(dict.fromkeys([os.getcwd(), *named]))[:MAX_FOLDERS]


def collect(ctx) -> dict:
    result = run_child([sys.executable, "-I", "-S", "-c", STATVFS_SCRIPT, *named_folders(ctx.environ)], timeout=TIMEOUT_S)
    if not result.ok:
        return {"error": f"measuring free space {result.describe()}"}
    return {"folders": json.loads(result.stdout)}

"""Static forensics of a pickle file that is not an SB3 archive: a `.pkl`/`.pickle` written by pickle or
cloudpickle, or a torch file (`.pt`/`.pth`, whose pickles live in a zip's `data.pkl`).

A program that segfaults after loading such a file is the same failure as an SB3 model with foreign
bytecode: a function cloudpickled under another Python is rebuilt without complaint and crashes when
called (docs/knowledge/sb3-model-files.md). So each pickle in the file is read by the same symbolic
machine and judged like an SB3 entry (data / contains code / dangerous, and the bytecode forensics:
which Python wrote its code and whether it crashes here), in the shape `forensics.inspect_model` gives,
so the model checks and the links to a crash read it unchanged. A torch zip's pickles that torch's
`weights_only` unpickler admits are data. Nothing is unpickled.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.sb3 import classify, pickle_vm, weights_only
from envdoctor.sb3.archive import PICKLE_LIMIT, open_zip
from envdoctor.sb3.forensics import inspect_model, producer
from envdoctor.sb3.weights_only import UNREADABLE, ZIP_MAGIC

PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth")


def is_sb3_archive(path: Path) -> bool:
    """A zip with SB3's `data` member (only its bounded directory is read)."""
    try:
        with open_zip(path) as archive:
            return "data" in archive.namelist()
    except UNREADABLE:
        return False


def pickles_in(path: Path) -> Tuple[bool, List[Tuple[str, bytes]]]:
    """(is a torch zip, [(name, bytes) of each pickle]) of the file at `path`; raises one of UNREADABLE."""
    with open(path, "rb") as stream:
        if stream.read(len(ZIP_MAGIC)) == ZIP_MAGIC:
            stream.seek(0)
            return True, weights_only.zip_pickles(stream, str(path))
        stream.seek(0)
        data = stream.read(PICKLE_LIMIT + 1)
    if len(data) > PICKLE_LIMIT:
        raise ValueError(f"{path} is larger than the {PICKLE_LIMIT} bytes read")
    return False, [(path.name, data)]


def judged(name: str, data: bytes, torch_zip: bool) -> Dict[str, Any]:
    """One pickle judged like an SB3 entry; a torch zip's pickle that weights_only admits is data."""
    entry = classify.classify_payload(name, None, data, None, pickle_vm.Budget())
    if torch_zip and entry["verdict"] != classify.Verdict.CORRUPT.value:
        try:
            admitted = not list(weights_only.trace_reasons(pickle_vm.run(data, pickle_vm.Budget()), weights_only.rules()))
        except (pickle_vm.CorruptPickle, pickle_vm.TooLarge):
            admitted = False
        if admitted:
            entry = {**entry, "verdict": classify.Verdict.DATA.value, "reasons": []}
    return entry


def inspect_pickle_file(path: Path) -> Optional[Dict[str, Any]]:
    """Every fact about the pickle file at `path` that can be read without running it, in the shape of
    `inspect_model`'s; None when it cannot be read (gone, too large, an unreadable zip)."""
    started = time.perf_counter()
    try:
        torch_zip, pickles = pickles_in(Path(path))
        size = Path(path).stat().st_size
    except UNREADABLE:
        return None
    entries = [judged(name, data, torch_zip) for name, data in pickles]
    return {
        "path": str(path),
        "kind": "torch" if torch_zip else "pickle",
        "file_bytes": size,
        "members": [name for name, _ in pickles],
        "sb3_version": None,
        "system_info": {},
        "producer": producer({}, entries),
        "algorithm": None,
        "plain_keys": [],
        "unusable_numbers": {},
        "entries": entries,
        "weights": [],
        "schedules": {},
        "optimizer_lr": None,
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
    }


def inspect_file(path: Path) -> Optional[Dict[str, Any]]:
    """The forensics of a model file a program opened or names: a pickle or torch file that is not an SB3
    archive read as a pickle file (None when it cannot be read), anything else as an SB3 archive, which
    raises ModelFileError for a file that is not one."""
    path = Path(path)
    if path.suffix.lower() in PICKLE_SUFFIXES and not is_sb3_archive(path):
        return inspect_pickle_file(path)
    return inspect_model(path)

"""The optimizer's last learning rate, read from `policy.optimizer.pth` without torch.

The member is itself a torch zip whose `*/data.pkl` holds `param_groups[0]['lr']` as a plain float;
the symbolic pickle machine reads it in milliseconds, where `torch.load` would first import torch
(the very thing that may crash here). It is the LAST rate used: 0.0 after a linear schedule ran out.
Everything in that inner zip is untrusted and bounded like the model itself: a damaged, encrypted or
oversized inner zip, or a rate SB3 cannot train with (NaN, infinite, negative), means no rate found.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Any, Optional

from envdoctor.sb3 import pickle_vm
from envdoctor.sb3.archive import OPTIMIZER, PICKLE_LIMIT, ModelArchive, ModelFileError, check_directory
from envdoctor.sb3.schedules import usable

# A compressed optimizer member is inflated into memory to reach the inner zip's directory; SB3 stores it.
COMPRESSED_LIMIT = 64 * 2 ** 20
UNREADABLE = (
    zipfile.BadZipFile, pickle_vm.CorruptPickle, ModelFileError, OSError, EOFError, ValueError,
    RuntimeError, NotImplementedError, zlib.error,  # encrypted, unknown compression, damaged deflate data
)


def last_learning_rate(model: ModelArchive) -> Optional[float]:
    """param_groups[0]['lr'] of the saved optimizer, or None when absent, unreadable or unusable."""
    if OPTIMIZER not in model.infos:
        return None
    try:
        return usable_rate(state_root(model))
    except UNREADABLE:
        return None


def state_root(model: ModelArchive) -> Any:
    """The root node of the inner zip's data.pkl, or None when it has none or a too large one."""
    with model.open_stream(OPTIMIZER, COMPRESSED_LIMIT) as stream:
        check_directory(stream, f"{model.path}: {OPTIMIZER}")
        with zipfile.ZipFile(stream) as inner:
            names = [i for i in inner.infolist() if i.filename.endswith("/data.pkl") or i.filename == "data.pkl"]
            if not names or names[0].file_size > PICKLE_LIMIT:
                return None
            with inner.open(names[0]) as pkl:
                return pickle_vm.run(pkl.read(PICKLE_LIMIT + 1)).root


def usable_rate(root: Any) -> Optional[float]:
    groups = root.get("param_groups") if isinstance(root, pickle_vm.Dict_) else None
    if not isinstance(groups, list) or not groups or not isinstance(groups[0], pickle_vm.Dict_):
        return None
    lr = groups[0].get("lr")
    return float(lr) if usable(lr) else None

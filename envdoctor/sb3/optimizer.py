"""The optimizer's last learning rate, read from `policy.optimizer.pth` without torch.

The member is itself a torch zip whose `*/data.pkl` holds `param_groups[0]['lr']` as a plain float;
the symbolic pickle machine reads it in milliseconds, where `torch.load` would first import torch
(the very thing that may crash here). It is the LAST rate used: 0.0 after a linear schedule ran out.
"""

from __future__ import annotations

import zipfile
from typing import Optional

from envdoctor.sb3 import pickle_vm
from envdoctor.sb3.archive import OPTIMIZER, PICKLE_LIMIT, ModelArchive, ModelFileError


def last_learning_rate(model: ModelArchive) -> Optional[float]:
    """param_groups[0]['lr'] of the saved optimizer, or None when absent or unreadable."""
    if OPTIMIZER not in model.infos:
        return None
    try:
        with model.open_stream(OPTIMIZER) as stream, zipfile.ZipFile(stream) as inner:
            names = [i for i in inner.infolist() if i.filename.endswith("/data.pkl") or i.filename == "data.pkl"]
            if not names or names[0].file_size > PICKLE_LIMIT:
                return None
            with inner.open(names[0]) as pkl:
                trace = pickle_vm.run(pkl.read(PICKLE_LIMIT + 1))
    except (zipfile.BadZipFile, pickle_vm.CorruptPickle, ModelFileError, OSError, EOFError, ValueError):
        return None
    groups = trace.root.get("param_groups") if isinstance(trace.root, pickle_vm.Dict_) else None
    if not isinstance(groups, list) or not groups or not isinstance(groups[0], pickle_vm.Dict_):
        return None
    lr = groups[0].get("lr")
    return float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else None

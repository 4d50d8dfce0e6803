"""Derive test models from a real one: replace `:serialized:` payloads the way SB3 writes them.

`splice` copies a model zip member by member, swapping the base64 of chosen `data` entries and,
optionally, the `- Python:` line of system_info.txt (so a spliced foreign payload carries the Python
that really made it). Used for foreign-Python, dangerous and corrupt models.
"""

import base64
import json
import pickle
import re
import zipfile


class RunsCommand:
    """Pickles as `os.system(command)`: what a malicious `:serialized:` value looks like."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        import os

        return (os.system, (self.command,))


def dangerous_payload(command):
    return base64.b64encode(pickle.dumps(RunsCommand(command), protocol=4)).decode()


def splice(source, target, payloads, python=None):
    """Copy `source` to `target` with data[key][":serialized:"] = payloads[key] (raw strings)."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for info in zin.infolist():
            raw = zin.read(info)
            if info.filename == "data":
                data = json.loads(raw)
                for key, text in payloads.items():
                    data[key] = {":type:": data.get(key, {}).get(":type:", "<class 'function'>") if isinstance(data.get(key), dict) else "<class 'function'>", ":serialized:": text}
                raw = json.dumps(data, indent=4).encode()
            elif info.filename == "system_info.txt" and python:
                raw = re.sub(rb"- Python: \S+", b"- Python: " + python.encode(), raw)
            zout.writestr(info, raw)
    return target

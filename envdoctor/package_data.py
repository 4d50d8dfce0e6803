"""Data files shipped inside envdoctor's packages (tables, schemas, target scripts).

They are read through the package's loader, not as paths beside `__file__`, so the same call works
from an installed package and from inside the single-file zipapp, on every supported Python.
"""

from __future__ import annotations

import pkgutil


def read_text(package: str, name: str) -> str:
    """The UTF-8 text of the data file `name` in `package` (e.g. "envdoctor.knowledge", "drivers.csv")."""
    data = pkgutil.get_data(package, name)
    if data is None:
        raise FileNotFoundError(f"{package} cannot read its data file {name}")
    return data.decode("utf-8")

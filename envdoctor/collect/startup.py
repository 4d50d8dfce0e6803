"""What the diagnosed interpreter said about itself as it started: the .pth files `site` could not
process. site prints each such failure and goes on (Lib/site.py, addpackage), so a leftover .pth of a
package that is gone (an editable install whose project folder was deleted) fails at every start of
that Python and is never seen by anything that only imports."""

from __future__ import annotations

import re
from typing import Dict, List

# site's words: "Error processing line N of PATH:", the traceback indented, then "Remainder of file ignored".
PTH_ERROR = re.compile(r"^Error processing line (\d+) of (.+?\.pth):\n(.*?)^Remainder of file ignored$", re.M | re.S)
MAX_KEPT = 20


def pth_errors(stderr: str) -> List[Dict[str, object]]:
    """Each .pth line site could not process: the file, the line number and the error it ended in."""
    found: List[Dict[str, object]] = []
    for match in PTH_ERROR.finditer(stderr or ""):
        said = [line.strip() for line in match.group(3).splitlines() if line.strip()]
        error = {"pth": match.group(2), "line": int(match.group(1)), "error": said[-1][:300] if said else ""}
        if error not in found:  # a folder on sys.path twice (lib and its lib64 link) is processed twice
            found.append(error)
    return found[:MAX_KEPT]

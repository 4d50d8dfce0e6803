"""What every view draws with: a console for a width and a colour choice, the severity marks, and Markdown
table cells, fences and folds. Sizes and counts are words.py's, escaping is escape.py's (both plain text,
for the checks and the CLI too)."""

from __future__ import annotations

import io
import re

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from envdoctor.model import Severity

# A console that draws into a string has no terminal to ask its height of; none of the views pages.
HEIGHT = 25
GLYPHS = {
    Severity.OK: ("✓", "green"),
    Severity.INFO: ("i", "cyan"),
    Severity.WARNING: ("!", "yellow"),
    Severity.ERROR: ("✗", "bold red"),
}
BADGES = {
    Severity.OK: "✅ ok",
    Severity.INFO: "ℹ️ info",
    Severity.WARNING: "⚠️ warning",
    Severity.ERROR: "❌ error",
}


def console(width: int, color: bool) -> Console:
    """A console drawing into a string (read it with `drawn`): colour only when asked, as the CLI asks
    for a terminal without NO_COLOR; never rich's own markup, highlighting or emoji codes, which
    untrusted text would trigger."""
    return Console(file=io.StringIO(), force_terminal=color, no_color=not color, width=width, height=HEIGHT, highlight=False, emoji=False)


def drawn(console: Console) -> str:
    """What was printed on a console made by `console`."""
    return console.file.getvalue()


def glyph(severity: Severity) -> Text:
    mark, style = GLYPHS[severity]
    return Text(mark, style=style)


def say(console: Console, text: Text, indent: int) -> None:
    """Print `text` with a hanging indent, wrapped at the console's width: wrapped here, then printed
    in one call that wraps nothing again (a print is rich's costly step), or, on a console without
    colour, written as the plain text rich would print."""
    width = console.width - indent
    fits = "\n" not in text.plain and "\t" not in text.plain and cell_len(text.plain) <= width
    lines = [text.copy()] if fits else text.wrap(console, width)  # most lines fit: rich's wrapping is the costly part
    for line in lines:
        line.rstrip()
    plain = [line.plain for line in lines]
    if console.color_system is None and not any("\t" in line for line in plain):  # a line is then its plain text
        console.file.write("".join(f"{' ' * indent}{line}\n" for line in plain))
        return
    console.print(Text("\n").join(Text(" " * indent) + line for line in lines), no_wrap=True, overflow="ignore", crop=False)


def badge(severity: Severity) -> str:
    """The Markdown mark of a severity without its word, for a table that says the rest."""
    return BADGES[severity].split()[0]


def cell(text: str) -> str:
    """One Markdown table cell: a `|` or a line break would end it, `<` would open HTML."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\r", " ").replace("\t", " ").replace("\n", " ")


def fence(body: str, language: str = "") -> str:
    """`body` as a fenced code block whose fence is longer than any run of backticks inside it,
    so nothing in it can close the block early."""
    ticks = "`" * max([3] + [len(run) + 1 for run in re.findall("`{3,}", body)])
    return f"{ticks}{language}\n{body}\n{ticks}\n"


def folded(summary: str, body: str, language: str) -> str:
    """`body` in a code block behind a `<details>` summary line."""
    return f"<details><summary>{summary}</summary>\n\n{fence(body, language)}\n</details>\n"

"""One interface for what every command shows: a renderer holds a command's result and draws it in each
format the command offers, so the CLI writes the formats asked for without knowing what they show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from envdoctor.document import Document
from envdoctor.model import Report
from envdoctor.render import markdown, terminal


class Renderer(Protocol):
    """A result for people (the terminal, wrapped at the view's width, coloured only when asked) and for programs (JSON)."""

    def terminal(self, verbose: bool = False, color: bool = False) -> str: ...

    def json(self) -> str: ...


class DocumentRenderer(Renderer, Protocol):
    """A result that also goes into a ticket, as Markdown."""

    def markdown(self) -> str: ...


@dataclass(frozen=True)
class ReportRenderer:
    """`envdoctor check`'s report: the domains and their findings, Markdown for an issue, the JSON report
    as the document's one text (the saved file's too)."""

    document: Document

    @property
    def report(self) -> Report:
        return self.document.report

    def terminal(self, verbose: bool = False, color: bool = False) -> str:
        return terminal.render(self.report, verbose=verbose, color=color)

    def markdown(self) -> str:
        return markdown.render(self.report)

    def json(self) -> str:
        return self.document.text

"""Every citation of the knowledge notes resolves: the code cites `docs/knowledge/FILE.md §N`, the knowledge
tables' comments `FILE.md section N`, and each named file exists with a heading that carries that number."""

from __future__ import annotations

import re

import pytest

from conftest import REPO

ROOT = REPO
NOTES = ROOT / "docs" / "knowledge"
SECTION = r"§\d+[a-z]?"
# A path followed by its sections: "docs/knowledge/domain-facts.md §1, §3 (…), §4" or "§1/§6".
CODE_CITATION = re.compile(rf"docs/knowledge/([\w.-]+)((?:(?:\s*\([^()]*\))?(?:,|/|;)?\s*{SECTION})*)")
TABLE_CITATION = re.compile(r"\b([\w-]+\.md) section (\d+[a-z]?)")
HEADING = re.compile(rf"^#{{2,3}} ({SECTION})\. ", re.M)


def sources() -> list:
    return sorted((ROOT / "envdoctor").rglob("*.py"))


def headings(name: str) -> set:
    return set(HEADING.findall((NOTES / name).read_text(encoding="utf-8")))


def code_citations(text: str) -> list:
    """(file, [§N, …]) for every citation in `text`; a citation may run on over lines of # comments."""
    joined = re.sub(r"\n[ \t]*#", "\n", text)
    return [(m.group(1), re.findall(SECTION, m.group(2))) for m in CODE_CITATION.finditer(joined)]


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_section_sign_in_the_code_belongs_to_a_resolving_citation(path):
    text = path.read_text(encoding="utf-8")
    found = code_citations(text)
    assert text.count("§") == sum(len(sections) for _, sections in found), f"a § in {path} names no docs/knowledge file"
    for name, sections in found:
        assert (NOTES / name).is_file(), f"{path} cites docs/knowledge/{name}, which does not exist"
        missing = set(sections) - headings(name)
        assert not missing, f"{path} cites {name} {sorted(missing)}, which has no such heading"


def test_the_code_cites_the_notes_by_path_only():
    loose = [str(p) for p in sources() if "knowledge notes" in p.read_text(encoding="utf-8")]
    assert loose == []
    assert sum(len(code_citations(p.read_text(encoding="utf-8"))) for p in sources()) >= 20


@pytest.mark.parametrize("table", sorted((ROOT / "envdoctor" / "knowledge").glob("*.csv")), ids=lambda p: p.name)
def test_the_tables_cite_sections_the_notes_have(table):
    for name, section in TABLE_CITATION.findall(table.read_text(encoding="utf-8")):
        assert f"§{section}" in headings(name), f"{table.name} cites {name} section {section}, which has no such heading"


def test_the_notes_the_tables_name_are_kept():
    cited = " ".join(table.read_text(encoding="utf-8") for table in (ROOT / "envdoctor" / "knowledge").glob("*.csv"))
    for name in ("domain-facts.md", "arch-sources.md", "driver-table-sources.md", "torch-pypi-requires.txt"):
        assert name in cited and (NOTES / name).is_file(), name


def test_a_citation_of_a_missing_section_is_caught():
    assert code_citations("see docs/knowledge/domain-facts.md §1, §3 (wheels), §9a and §2") == [("domain-facts.md", ["§1", "§3", "§9a"])]
    assert "§9a" not in headings("domain-facts.md") and "§1a" in headings("domain-facts.md")

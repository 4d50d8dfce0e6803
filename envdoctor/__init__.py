"""envdoctor: explains why a Python ML/RL stack crashes on this machine, and how to fix it."""

__version__ = "0.1.0"
# The day the knowledge tables (envdoctor/knowledge/*.csv) were last checked against their sources, named
# by `envdoctor --version`; a test holds it no older than the last commit that changed a table.
KNOWLEDGE_DATE = "2026-11-26"

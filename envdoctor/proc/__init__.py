"""Processes: the children the doctor starts (`children`, each through the intermediary `subreaper`)
and what it reads of running processes (`processes`: psutil, or `procfs`'s answers from /proc where
psutil is absent)."""

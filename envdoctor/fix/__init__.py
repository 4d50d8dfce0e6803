"""Remediation: plan a fix as numbered steps, carry it out on request, verify it, and roll it back.

Planners are pure functions of the collected facts; only `apply` and `rollback` change anything, and
only after the environment was recorded under the report directory.
"""

from envdoctor.errors import EnvdoctorError


class FixError(EnvdoctorError):
    """A fix could not be planned, recorded or restored as asked."""

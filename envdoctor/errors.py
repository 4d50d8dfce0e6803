"""The doctor's own exceptions. Only the CLI turns them into a one-line message and an exit code."""


class EnvdoctorError(Exception):
    """Base of every error the doctor reports to the user (exit code 2: bad usage or unreadable input)."""


class UsageError(EnvdoctorError):
    """The user asked for something that cannot be done as asked."""


class ReportReadError(EnvdoctorError):
    """A recorded report could not be read or does not match a schema this version understands."""


class TargetReadError(EnvdoctorError):
    """The diagnosed interpreter's facts could not be read (it did not start, or gave no answer)."""

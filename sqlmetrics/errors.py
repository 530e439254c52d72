"""The package's own error and warning types."""


class SqlmetricsError(ValueError):
    """Bad input from the caller: the message names the file, line, column or parameter and the fix."""


class SqlmetricsWarning(UserWarning):
    """Something the caller should know about the data, such as queries missing from a run."""

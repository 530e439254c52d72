"""The package's own error and warning types, and what their messages never show."""
import os
import re
import sys
import warnings

# A URL's user and password (https://alice:secret@host/..., or a token as the user), up to the authority's last
# '@' (a password may hold one), and the query parameters that carry credentials: presigned S3 and GCS URLs, Azure
# SAS tokens, API keys.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s'\"]*@")
_SECRET_PARAMETER = re.compile(
    r"(?i)([?&](?:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)|sig|signature|"
    r"token|access_token|auth|api_key|apikey|key|password|secret|se|sp|sv|skoid|sktid|code)=)[^&#\s'\"]*")


def redacted(text: str) -> str:
    """`text` with the secrets a URL may carry replaced by ***: its user and password, and credential parameters."""
    return _SECRET_PARAMETER.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


class SqlmetricsError(ValueError):
    """Bad input from the caller: the message names the file, line, column or parameter and the fix (and never
    the secrets of a URL)."""

    def __init__(self, message="", *args):
        super().__init__(redacted(str(message)), *args)


class SqlmetricsWarning(UserWarning):
    """Something the caller should know about the data, such as queries missing from a run."""

    def __init__(self, message="", *args):
        super().__init__(redacted(str(message)), *args)


_PACKAGE = os.path.dirname(__file__) + os.sep


def warn(message: str) -> None:
    """Warn with a SqlmetricsWarning attributed to the caller's own line: the first frame outside the package,
    however deep the call that found the problem, so that Python shows where the user called it, not our source."""
    frame, level = sys._getframe(1), 2  # stacklevel 2: warn()'s caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(SqlmetricsWarning(message), stacklevel=level)

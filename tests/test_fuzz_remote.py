"""Property: a secret a URL carries (its user and password, or a credential parameter: presigned S3 and GCS
signatures, SAS tokens, API keys) never appears in a message, whatever else the URL holds: any scheme and case,
percent-escapes, an '@' or ':' inside the password, several parameters in any order, text around the URL. The
redaction is one function (errors.redacted, which every SqlmetricsError and SqlmetricsWarning applies); the last test
reads a URL that cannot be fetched end to end, through the command line."""
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlmetrics.cli import main
from sqlmetrics.errors import SqlmetricsError, redacted

SECRET = st.text(alphabet=string.ascii_letters + string.digits + "-_.~%+=:@!$", min_size=6, max_size=20).map(
    lambda s: "S3cr" + s)  # a recognisable prefix no other part of the URL holds
SCHEME = st.sampled_from(["http", "https", "HTTPS", "s3", "gs", "az", "abfss", "hf"])
HOST = st.sampled_from(["example.com", "127.0.0.1:1", "bucket", "account.blob.core.windows.net"])
PARAMETER = st.sampled_from(["X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "x-goog-signature",
                             "sig", "signature", "token", "access_token", "auth", "api_key", "apikey", "key",
                             "password", "secret", "se", "sp", "sv", "code"])


@settings(max_examples=300, deadline=None)
@given(SCHEME, HOST, SECRET, SECRET, PARAMETER, st.booleans(), st.text(alphabet=" ('\"", max_size=2))
def test_no_secret_of_a_url_survives_redaction(scheme, host, user, secret, parameter, in_userinfo, around):
    if in_userinfo:
        url = f"{scheme}://{user.replace('/', '')}:{secret}@{host}/runs/run.parquet?x=1"
    else:
        url = f"{scheme}://{host}/runs/run.parquet?x=1&{parameter}={secret.replace('&', '')}&y=2"
    text = redacted(f"run file {around}{url}{around[::-1]}: the server answered HTTP 403")
    assert "S3cr" not in text, text
    assert "/runs/run.parquet" in text  # the rest of the URL still says which file


@pytest.mark.parametrize("url", [
    "http://alice:Pa@Ss1@127.0.0.1:1/run.parquet",  # an '@' inside the password: the last '@' ends the user part
    "http://127.0.0.1:1/run.parquet?X-Amz-Signature=Pa@Ss1&X-Amz-Credential=Pa@Ss2",
])
def test_a_url_that_cannot_be_read_is_named_without_its_secret(url, tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    assert main(["eval", "-m", "P@1", str(qrels), url]) != 0
    err = capsys.readouterr().err
    assert "127.0.0.1:1/run.parquet" in err and "Ss1" not in err and "Ss2" not in err, err


def test_redaction_keeps_a_message_without_urls():
    text = "qrels file 'q.txt', line 3: column 'relevance' holds 'a@b', which is not an integer relevance grade"
    assert redacted(text) == text
    with pytest.raises(SqlmetricsError, match=r"https://\*\*\*@host/x\?sig=\*\*\*"):
        raise SqlmetricsError("cannot read https://u:p@host/x?sig=abc")

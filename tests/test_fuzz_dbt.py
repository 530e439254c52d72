"""Property: whatever text a user gives `sqlmetrics sql --dbt` as a column name, a segment column or a literal of
--relevance, the model dbt's Jinja compiles is the plain statement (the same command without --dbt, over the tables
the references name), or both commands refuse it alike: no Jinja the user typed runs, vanishes or changes a value.
The text is drawn from Jinja's delimiters and what escapes them ({{ }} {% %} {# #}, raw/endraw, quotes, whitespace
control). tests/test_outputs.py's test_sql_dbt_carries_no_jinja_but_the_references has a hand-written case of each."""
import contextlib
import io

import jinja2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlmetrics.cli import main

PIECES = ["{{", "}}", "{%", "%}", "{#", "#}", "{", "}", "%", "#", "-", "'", '"', "raw", "endraw", " ", "x", "7*7",
          "\\", "\n", "do run_query('x')"]
TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join)
SOURCE, REF = "{{ source('raw', 'qrels') }}", "{{ ref('stg_run') }}"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(*argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _compile_as_dbt(model: str) -> str:
    """The model as dbt's Jinja compiles it: each reference a table name; any other call fails the test."""
    def ran(*args, **kwargs):
        raise AssertionError(f"the model ran {args}")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"], keep_trailing_newline=True)
    return env.from_string(model).render(source=lambda s, t: f"{s}_{t}", ref=lambda *a, **k: a[-1], run_query=ran,
                                         var=ran, env_var=ran, log=ran, adapter=ran)


@pytest.mark.slow  # hypothesis, 60 texts in each place
@SETTINGS
@given(TEXT, st.sampled_from(["column", "group-by", "relevance"]))
def test_any_text_is_inert_in_the_model(text, where):
    # `--flag=value`: a value starting with '-' is the flag's, not another flag
    extra = {"column": [f"--column=query_id={text}"], "group-by": [f"--group-by={text}"],
             "relevance": ["--relevance=CASE WHEN score = '" + text.replace("'", "''") + "' THEN 1 ELSE 0 END"]}[where]
    qrels = [] if where == "relevance" else ["--qrels", SOURCE]
    plain_qrels = [] if where == "relevance" else ["--qrels", "raw_qrels"]
    none = ["--qrels", "none"] if where == "relevance" else []
    code, model, err = _run("sql", "-m", "RR", "--dbt", *qrels, *none, "--run", REF, *extra)
    plain_code, plain, plain_err = _run("sql", "-m", "RR", *plain_qrels, *none, "--run", "stg_run", *extra)
    assert code == plain_code, (err, plain_err)
    if code == 0:
        assert _compile_as_dbt(model) == plain.rstrip().removesuffix(";") + "\n"

"""identifiers.quote_identifier and sql_literal spell DuckDB names and literals by hand (a small evaluation
should not load sqlglot's DuckDB dialect): their text must be sqlglot's, and DuckDB must read it back."""
import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sqlmetrics.identifiers import column_identifier, quote_identifier, sql_literal

CON = duckdb.connect()
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(TEXT.filter(bool))
def test_quote_identifier_is_sqlglots_and_duckdb_reads_it_back(name):
    assert quote_identifier(name) == exp.to_identifier(name, quoted=True).sql("duckdb")
    assert CON.execute(f"SELECT 1 AS {quote_identifier(name)}").description[0][0] == name


@settings(max_examples=200, deadline=None)
@given(st.one_of(TEXT, st.integers(min_value=-2**63, max_value=2**63 - 1), st.booleans(), st.none()))
def test_sql_literal_is_sqlglots_and_duckdb_reads_it_back(value):
    assert sql_literal(value) == exp.convert(value).sql("duckdb")
    assert CON.execute(f"SELECT {sql_literal(value)}").fetchone()[0] == value


def test_other_values_are_left_to_sqlglot():
    for value in ([1, 2], float("nan"), ("a",), -1e16, 0.5):
        assert sql_literal(value) == exp.convert(value).sql("duckdb")


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "snowflake"])
@pytest.mark.parametrize("name", ["x\n", "select\n", "Day\n"])
def test_a_name_ending_in_a_line_break_is_quoted(dialect, name):
    """A regular expression's $ matches before a last line break: 'x\\n' passed for a bare name and came out as the
    column x (or broke the statement, 'select\\n'). The found name is the one given, and DuckDB reads it back."""
    ident = column_identifier(name, dialect)
    assert ident.quoted and ident.name == name
    assert CON.execute(f"SELECT 1 AS {ident.sql('duckdb')}").description[0][0] == name

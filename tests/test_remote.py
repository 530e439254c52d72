"""Many files and object stores: glob=True over Parquet and text (CSV, TSV, JSON Lines, TREC) files, hive
folders too, and s3:// and http:// inputs read through fsspec, against servers this file starts on 127.0.0.1
(a moto S3 server, a stdlib HTTP server). No other address is contacted: the S3 endpoint, the credentials
and short timeouts are fsspec's configuration, set here for each test.

The oracle of every remote or globbed evaluation is the same data evaluated from plain local files, one
file at a time (the local readers are checked against trec_eval, pytrec_eval and ir_measures elsewhere).
"""
from __future__ import annotations

import functools
import io
import os
import random
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import warnings
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import aiohttp
import fsspec
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.server import ThreadedMotoServer

import sqlmetrics as sm
from sqlmetrics.cli import main
from sqlmetrics.local.evaluate import connect


MEASURES = ["AP", "nDCG@10", "P@5", "RR", "R@10"]
QUERIES = ["q1", "q2", "q3", "q4"]


def _run_rows(seed: int) -> list:
    """(query, doc, score) rows: every query ranks 12 documents, with scores of its own."""
    rng = random.Random(seed)
    return [(q, f"d{d}", round(rng.uniform(0, 10), 3)) for q in QUERIES for d in rng.sample(range(30), 12)]


def _qrels_rows() -> list:
    rng = random.Random(7)
    return [(q, f"d{d}", rng.choice([0, 1, 1, 2])) for q in QUERIES for d in rng.sample(range(30), 10)]


def _write_trec_run(path: Path, rows: list) -> None:
    path.write_text("".join(f"{q} Q0 {d} {i} {s} tag\n" for i, (q, d, s) in enumerate(rows, 1)))


def _table(rows: list) -> pa.Table:
    return pa.table({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                     "score": [float(r[2]) for r in rows]})


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """qrels.txt, and one run as run.txt (TREC), run.csv and run.parquet, and a second run as run2.parquet."""
    folder = tmp_path_factory.mktemp("remote_data")
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in _qrels_rows()))
    rows = _run_rows(1)
    _write_trec_run(folder / "run.txt", rows)
    pa.csv.write_csv(_table(rows), folder / "run.csv")
    pq.write_table(_table(rows), folder / "run.parquet")
    pq.write_table(_table(_run_rows(2)), folder / "run2.parquet")
    (folder / "bad.csv").write_text("query_id,doc_id,score\nq1,d1,1.5\nq1,d2,high\n")
    return folder


def _same(got: sm.Results, expected: sm.Results) -> None:
    assert got.aggregate.keys() == expected.aggregate.keys()
    for measure, value in expected.aggregate.items():
        assert got.aggregate[measure] == pytest.approx(value, rel=1e-12, abs=1e-15), measure
    assert sorted(got.per_query.to_pylist(), key=str) == sorted(expected.per_query.to_pylist(), key=str)


def _free_port() -> int:
    """A port of 127.0.0.1 nobody listens on: a connection to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------------------------- S3 (moto)

@pytest.fixture(scope="module")
def s3_server(files):
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _s3_config(monkeypatch, endpoint: str) -> None:
    """fsspec's configuration for s3:// (what a user sets in ~/.config/fsspec or FSSPEC_S3_* variables), and
    AWS credentials from the environment: nothing reaches AWS or an instance-metadata address."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_EC2_METADATA_DISABLED", "true"),
                        ("AWS_CONFIG_FILE", os.devnull), ("AWS_SHARED_CREDENTIALS_FILE", os.devnull)):
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(fsspec.config.conf, "s3", {
        "endpoint_url": endpoint,
        "config_kwargs": {"connect_timeout": 2, "read_timeout": 5, "retries": {"max_attempts": 1}}})


@pytest.fixture
def bucket(s3_server, files, monkeypatch) -> str:
    _s3_config(monkeypatch, s3_server)
    s3 = fsspec.filesystem("s3")
    if not s3.exists("evals"):
        s3.mkdir("evals")
        for name in ("qrels.txt", "run.txt", "run.csv", "run.parquet", "run2.parquet", "bad.csv"):
            s3.put_file(str(files / name), f"evals/{name}")
    return "s3://evals"


@pytest.mark.parametrize("run", ["run.txt", pytest.param("run.csv", marks=pytest.mark.slow), "run.parquet"])
def test_s3_run_and_qrels_equal_the_local_files(bucket, files, run, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the text objects are copied to
    got = sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/{run}", MEASURES)
    assert list(tmp_path.glob("sqlmetrics-input-*")) == []  # the copies are removed after the evaluation
    _same(got, sm.evaluate(files / "qrels.txt", files / run, MEASURES))


def test_no_duckdb_extension_is_loaded(bucket, web, http_config):
    sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/run.parquet", MEASURES)
    sm.evaluate(f"{web}/qrels.txt", f"{web}/run.parquet", MEASURES)
    con = connect()  # a cursor on the database those evaluations used
    assert con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded AND extension_name "
                       "IN ('httpfs', 'aws', 'azure')").fetchall() == []


@pytest.mark.slow  # several runs: evaluate's and compare's; one S3 run is the fast case
def test_s3_several_runs_compare_like_local_files(bucket, files):
    got = sm.evaluate(f"{bucket}/qrels.txt", {"a": f"{bucket}/run.parquet", "b": f"{bucket}/run2.parquet"}, MEASURES)
    expected = sm.evaluate(files / "qrels.txt", {"a": files / "run.parquet", "b": files / "run2.parquet"}, MEASURES)
    assert got.aggregate == expected.aggregate
    report = sm.compare(f"{bucket}/qrels.txt", {"a": f"{bucket}/run.txt", "b": f"{bucket}/run2.parquet"}, ["AP"])
    assert report.means["a"]["AP"] == pytest.approx(expected.aggregate["a"]["AP"], rel=1e-12)


def test_s3_command_line(bucket, files, capsys):
    assert main(["eval", f"{bucket}/qrels.txt", f"{bucket}/run.csv", "-m", "AP", "-f", "csv"]) == 0
    remote = capsys.readouterr().out
    assert main(["eval", str(files / "qrels.txt"), str(files / "run.csv"), "-m", "AP", "-f", "csv"]) == 0
    assert remote == capsys.readouterr().out


def test_s3_bad_row_names_the_url_and_line(bucket, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(sm.SqlmetricsError, match=r"run file 's3://evals/bad.csv', line 3: column 'score' holds 'high'"):
        sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/bad.csv", MEASURES)
    assert list(tmp_path.glob("sqlmetrics-input-*")) == []


@pytest.mark.parametrize("name", ["missing.txt", "missing.parquet"])
def test_s3_missing_object_names_the_url(bucket, name):
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"run file 's3://evals/{name}': no such object")):
        sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/{name}", MEASURES)


def test_s3_missing_bucket_names_the_url(bucket):
    with pytest.raises(sm.SqlmetricsError, match=re.escape("qrels file 's3://no-such-bucket/qrels.txt': no such")):
        sm.evaluate("s3://no-such-bucket/qrels.txt", f"{bucket}/run.txt", MEASURES)


@pytest.mark.slow  # a connection timeout; HTTP's unreachable host is the fast case
def test_s3_unreachable_endpoint_fails_fast_naming_the_url(monkeypatch, files):
    _s3_config(monkeypatch, f"http://127.0.0.1:{_free_port()}")
    start = time.monotonic()
    with pytest.raises(sm.SqlmetricsError, match=r"qrels file 's3://evals/qrels.txt': cannot be read \(.*127\.0\.0\.1"):
        sm.evaluate("s3://evals/qrels.txt", files / "run.txt", MEASURES)
    assert time.monotonic() - start < 30


@pytest.mark.slow  # the local hive folders and the S3 glob of text objects are the fast cases
def test_s3_glob_of_hive_partitioned_objects(bucket, files):
    s3 = fsspec.filesystem("s3")
    for arm, name in (("a", "run.parquet"), ("b", "run2.parquet")):
        s3.put_file(str(files / name), f"evals/runs/arm={arm}/part-0.parquet")
    got = sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/runs/*/*.parquet", MEASURES, glob=True,
                      columns={"run_name": "arm"})
    expected = sm.evaluate(files / "qrels.txt", {"a": files / "run.parquet", "b": files / "run2.parquet"}, MEASURES)
    assert set(got.aggregate) == {"a", "b"}
    for arm in ("a", "b"):
        assert got.aggregate[arm] == pytest.approx(expected.aggregate[arm], rel=1e-12)


@pytest.mark.slow  # a second S3 server
def test_new_s3_settings_take_effect(bucket, s3_server, files, monkeypatch):
    """DuckDB reads Parquet through the filesystem registered with it: after the settings change (another
    endpoint here), reads go to the new endpoint. (moto's servers in one process share their buckets.)"""
    other = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    other.start()
    host, port = other.get_host_and_port()
    _s3_config(monkeypatch, f"http://{host}:{port}")
    expected = sm.evaluate(files / "qrels.txt", files / "run.parquet", MEASURES)
    _same(sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/run.parquet", MEASURES), expected)
    other.stop()  # a filesystem still pointing there would now fail
    _s3_config(monkeypatch, s3_server)
    _same(sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/run.parquet", MEASURES), expected)


def test_missing_package_names_the_extra(monkeypatch, files):
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if fsspec were not installed
    with pytest.raises(sm.SqlmetricsError, match=re.escape('pip install ".[remote]" in a clone of sqlmetrics')):
        sm.evaluate("s3://evals/qrels.txt", files / "run.txt", MEASURES)


# ------------------------------------------------------------------------------------------------ HTTP(S)

class _RangeHandler(SimpleHTTPRequestHandler):
    """The standard library's file server, plus byte ranges (`Range: bytes=a-b`), which fsspec's http
    filesystem uses to read part of a file, as real web servers and CDNs answer them."""

    def send_head(self):
        if status := re.match(r"/status/(\d+)/", self.path):  # what a server without the file for us answers
            self.send_error(int(status.group(1)))
            return None
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        path = self.translate_path(self.path)
        if not wanted or not os.path.isfile(path):
            return super().send_head()
        data = Path(path).read_bytes()
        start, end = int(wanted.group(1)), min(int(wanted.group(2) or len(data) - 1), len(data) - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        return io.BytesIO(data[start:end + 1])

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def web(files):
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_RangeHandler, directory=str(files)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.fixture
def http_config(monkeypatch):
    # https:// goes through the same fsspec filesystem (aiohttp), with its certificate checks; the test
    # server speaks plain http.
    monkeypatch.setitem(fsspec.config.conf, "http", {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=5)}})


@pytest.mark.parametrize("run", ["run.txt", "run.csv", "run.parquet"])
def test_http_run_and_qrels_equal_the_local_files(web, http_config, files, run):
    got = sm.evaluate(f"{web}/qrels.txt", f"{web}/{run}", MEASURES)
    _same(got, sm.evaluate(files / "qrels.txt", files / run, MEASURES))


def test_http_missing_file_names_the_url(web, http_config):
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"run file '{web}/missing.csv': no such object")):
        sm.evaluate(f"{web}/qrels.txt", f"{web}/missing.csv", MEASURES)


@pytest.mark.parametrize("status, says", [(401, "HTTP 401 (unauthorized"), (403, "HTTP 403 (forbidden"),
                                          (500, "HTTP 500 (internal server error)")])
def test_http_status_is_named(web, http_config, status, says):
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"run file '{web}/status/{status}/run.csv': the server "
                                                           f"answered {says}")):
        sm.evaluate(f"{web}/qrels.txt", f"{web}/status/{status}/run.csv", MEASURES)


SECRETS = ("PASSWORD", "SIGNATURE", "TOKEN")


@pytest.mark.parametrize("secret_url", [
    "http://alice:PASSWORD@{host}/missing.txt",
    "http://{host}/missing.txt?X-Amz-Credential=TOKEN&X-Amz-Signature=SIGNATURE",
    "http://{host}/status/403/run.txt?sv=2024&sig=SIGNATURE",
])
def test_no_message_shows_a_urls_secrets(web, http_config, files, capsys, secret_url):
    url = secret_url.format(host=web.removeprefix("http://"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sm.evaluate(url, files / "run.txt", MEASURES, queries="qrels")
            message = ""
        except sm.SqlmetricsError as e:
            message = str(e)
    capsys.readouterr()
    main(["eval", url, str(files / "run.txt")])
    out, err = capsys.readouterr()
    shown = " ".join([message, *(str(w.message) for w in caught), out, err])
    assert shown.strip() and not any(secret in shown for secret in SECRETS), shown


def test_http_glob_is_refused(web, http_config):
    with pytest.raises(sm.SqlmetricsError, match="a web server has no list of its files"):
        sm.evaluate(f"{web}/qrels.txt", f"{web}/run*.parquet", MEASURES, glob=True)


def test_http_unreachable_host_fails_fast_naming_the_url(http_config, files):
    url = f"http://127.0.0.1:{_free_port()}/qrels.txt"
    start = time.monotonic()
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"qrels file '{url}': cannot be read (Cannot connect")):
        sm.evaluate(url, files / "run.txt", MEASURES)
    assert time.monotonic() - start < 30


# ------------------------------------------------------------------------------ globs and hive partitions

DAYS, ARMS = ("2024-06-01", "2024-06-02"), ("a", "b")


@pytest.fixture(scope="module")
def hive(tmp_path_factory) -> tuple[Path, dict]:
    """runs/day=D/arm=A/part-0.parquet: one run per (day, arm), each ranking every query; the file of each."""
    root = tmp_path_factory.mktemp("hive") / "runs"
    paths = {}
    for i, day in enumerate(DAYS):
        for j, arm in enumerate(ARMS):
            folder = root / f"day={day}" / f"arm={arm}"
            folder.mkdir(parents=True)
            paths[day, arm] = folder / "part-0.parquet"
            pq.write_table(_table(_run_rows(10 * i + j)), paths[day, arm])
    return root, paths


def test_hive_folder_partition_keys_are_run_names_and_segments(hive, files):
    root, paths = hive
    got = sm.evaluate(files / "qrels.txt", root, MEASURES, glob=True, columns={"run_name": "arm"}, group_by="day")
    rows = got.per_group.to_pylist()
    assert len(rows) == len(paths)
    for row in rows:
        alone = sm.evaluate(files / "qrels.txt", paths[str(row["day"]), row["run"]], MEASURES).aggregate
        assert {m: row[m] for m in MEASURES} == pytest.approx(alone, rel=1e-12)
        assert row["num_lists"] == len(QUERIES)


def test_hive_folder_of_one_day_gives_a_run_per_arm(hive, files):
    root, paths = hive
    got = sm.evaluate(files / "qrels.txt", root / f"day={DAYS[0]}", MEASURES, glob=True, columns={"run_name": "arm"})
    assert set(got.aggregate) == set(ARMS)
    for arm in ARMS:
        alone = sm.evaluate(files / "qrels.txt", paths[DAYS[0], arm], MEASURES).aggregate
        assert got.aggregate[arm] == pytest.approx(alone, rel=1e-12)


def test_pattern_segments_by_day(hive, files, capsys):
    root, paths = hive
    pattern = str(root / "*" / "arm=b" / "*.parquet")
    got = sm.evaluate(files / "qrels.txt", pattern, ["AP"], glob=True, group_by="day")
    for row in got.per_group.to_pylist():
        assert row["AP"] == pytest.approx(sm.evaluate(files / "qrels.txt", paths[str(row["day"]), "b"],
                                                      ["AP"]).aggregate["AP"], rel=1e-12)
    # The command line's --glob: the same numbers.
    assert main(["eval", "--glob", str(files / "qrels.txt"), pattern, "-m", "AP", "--group-by", "day", "-f", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + len(DAYS)
    for line in out[1:]:
        day, value = line.split(",")[1], float(line.split(",")[2])
        assert value == pytest.approx(got.per_group.to_pydict()["AP"][DAYS.index(day)], abs=5e-5)


def test_compare_takes_glob(hive, files):
    root, paths = hive
    report = sm.compare(files / "qrels.txt", root / f"day={DAYS[1]}", ["AP"], glob=True, columns={"run_name": "arm"})
    for arm in ARMS:
        assert report.means[arm]["AP"] == pytest.approx(
            sm.evaluate(files / "qrels.txt", paths[DAYS[1], arm], ["AP"]).aggregate["AP"], rel=1e-12)


@pytest.mark.slow  # many random collections
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.integers(0, 3), min_size=len(_run_rows(5)), max_size=len(_run_rows(5))),
       nested=st.booleans())
def test_any_split_into_files_evaluates_as_the_whole(tmp_path_factory, files, parts, nested):
    """A run's rows spread over files (any split, in hive folders or side by side) read
    with glob=True evaluate as the run in one table."""
    rows = _run_rows(5)
    root = tmp_path_factory.mktemp("split")
    for part in set(parts):
        folder = root / f"part={part}" if nested else root
        folder.mkdir(exist_ok=True)
        pq.write_table(_table([r for r, p in zip(rows, parts) if p == part]), folder / f"{part}.parquet")
    got = sm.evaluate(files / "qrels.txt", root, MEASURES, glob=True)
    whole = sm.evaluate(files / "qrels.txt", _table(rows), MEASURES).aggregate
    assert got.aggregate == pytest.approx(whole, rel=1e-12)


def test_bad_row_names_its_file_and_row(tmp_path, files):
    pq.write_table(_table(_run_rows(3)), tmp_path / "good.parquet")
    scores = [1.0] * 5 + [None, 2.0]  # row 6 has no score
    pq.write_table(pa.table({"query_id": ["q5"] * 7, "doc_id": [f"d{i}" for i in range(7)], "score": scores}),
                   tmp_path / "holes.parquet")
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"run files '{tmp_path}', file '{tmp_path / 'holes.parquet'}', "
                                                           "row 6: column 'score' holds None")):
        sm.evaluate(files / "qrels.txt", tmp_path, MEASURES, glob=True)


def test_pattern_matching_nothing_names_it(tmp_path, files):
    pattern = str(tmp_path / "runs-*.parquet")
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"the pattern '{pattern}' matches no file")):
        sm.evaluate(files / "qrels.txt", pattern, MEASURES, glob=True)
    with pytest.raises(sm.SqlmetricsError, match=r"matches no file \(glob=True reads a folder's \.parquet files, "
                                                 r"in it or below, or else its CSV, TSV, JSON Lines and TREC text"):
        sm.evaluate(files / "qrels.txt", tmp_path, MEASURES, glob=True)


def _write_text(path: Path, rows: list, fmt: str) -> None:
    """A run's (query, doc, score) rows as a text file of the format: TREC (rank numbers of the file's
    own), CSV, TSV or JSON Lines."""
    if fmt == "trec":
        _write_trec_run(path, rows)
    elif fmt == "jsonl":
        path.write_text("".join(f'{{"query_id": "{q}", "doc_id": "{d}", "score": {v}}}\n' for q, d, v in rows))
    else:
        delim = "," if fmt == "csv" else "\t"
        path.write_text(delim.join(("query_id", "doc_id", "score")) + "\n"
                        + "".join(f"{q}{delim}{d}{delim}{v}\n" for q, d, v in rows))


SUFFIX = {"trec": ".txt", "csv": ".csv", "tsv": ".tsv", "jsonl": ".jsonl"}


@pytest.mark.slow  # many random collections
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.integers(0, 2), min_size=len(_run_rows(5)), max_size=len(_run_rows(5))),
       fmt=st.sampled_from(sorted(SUFFIX)), nested=st.booleans())
def test_any_split_into_text_files_evaluates_as_the_whole(tmp_path_factory, files, parts, fmt, nested):
    """A run's rows spread over TREC, CSV, TSV or JSON Lines files, read with glob=True (a folder, or a pattern),
    evaluate as the run in one table."""
    rows = _run_rows(5)
    root = tmp_path_factory.mktemp("text_split")
    for part in set(parts):
        folder = root / f"part={part}" if nested else root
        folder.mkdir(exist_ok=True)
        _write_text(folder / f"{part}{SUFFIX[fmt]}", [r for r, p in zip(rows, parts) if p == part], fmt)
    (root / "_SUCCESS").write_text("")  # a marker Spark and Hadoop leave: not data, not read
    whole = sm.evaluate(files / "qrels.txt", _table(rows), MEASURES).aggregate
    pattern = str(root / ("*" if nested else "") / f"*{SUFFIX[fmt]}")
    for source in (root, pattern):
        got = sm.evaluate(files / "qrels.txt", source, MEASURES, glob=True)
        assert got.aggregate == pytest.approx(whole, rel=1e-12)


def test_hive_folders_of_text_runs_and_qrels(tmp_path, files, capsys):
    """runs/day=D/arm=A/run.txt (TREC text) and run.csv: the hive keys are columns, typed as DuckDB types them
    (a DATE day), usable as run names and segments; qrels split over TREC files read as one too."""
    expected = {}
    for i, day in enumerate(DAYS):
        for j, arm in enumerate(ARMS):
            folder = tmp_path / "runs" / f"day={day}" / f"arm={arm}"
            folder.mkdir(parents=True)
            rows = _run_rows(10 * i + j)
            _write_text(folder / ("run.txt" if arm == "a" else "run.csv"), rows, "trec" if arm == "a" else "csv")
            expected[day, arm] = sm.evaluate(files / "qrels.txt", _table(rows), MEASURES).aggregate
    qrels = (files / "qrels.txt").read_text().splitlines(keepends=True)
    for half in (0, 1):
        (tmp_path / "qrels" / f"half={half}").mkdir(parents=True)
        (tmp_path / "qrels" / f"half={half}" / "qrels.txt").write_text("".join(qrels[half::2]))
    got = sm.evaluate(tmp_path / "qrels", tmp_path / "runs", MEASURES, glob=True, columns={"run_name": "arm"},
                      group_by="day")
    assert got.per_group.schema.field("day").type == pa.date32()
    rows = got.per_group.to_pylist()
    assert len(rows) == len(expected)
    for row in rows:
        assert {m: row[m] for m in MEASURES} == pytest.approx(expected[str(row["day"]), row["run"]], rel=1e-12)
    # The command line's --glob reads the same
    assert main(["eval", "--glob", str(tmp_path / "qrels"), str(tmp_path / "runs" / "*" / "arm=a" / "*.txt"),
                 "-m", "AP", "--group-by", "day", "-f", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()[1:]
    assert {line.split(",")[1]: float(line.split(",")[2]) for line in out} == pytest.approx(
        {day: expected[day, "a"]["AP"] for day in DAYS}, abs=5e-5)


@pytest.mark.parametrize("fmt, bad, where", [
    ("csv", "query_id,doc_id,score\nq1,d1,1.5\n\nq1,d2,high\n", "line 4: column 'score' holds 'high'"),
    ("trec", "q1 Q0 d1 1 1.5 t\n# a comment\nq1 Q0 d2 2 high t\n", "line 3: column 'score' holds 'high'"),
    pytest.param("jsonl", '{"query_id": "q1", "doc_id": "d1", "score": 1.5}\n{"query_id": "q1", "doc_id": "d2", '
                 '"score": "high"}\n', "line 2: column 'score' holds 'high'", marks=pytest.mark.slow),
    pytest.param("trec", "q1 Q0 d1 1 1.5 t\nq1 Q0 d2\n", "line 2: expected 6 whitespace-separated fields",
                 marks=pytest.mark.slow),
])
def test_bad_line_of_a_text_glob_names_its_file_and_line(tmp_path, files, fmt, bad, where):
    _write_text(tmp_path / f"good{SUFFIX[fmt]}", _run_rows(3), fmt)
    (tmp_path / f"worse{SUFFIX[fmt]}").write_text(bad)
    file = tmp_path / f"worse{SUFFIX[fmt]}"
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"run files '{tmp_path}', file '{file}', {where}")):
        sm.evaluate(files / "qrels.txt", tmp_path, MEASURES, glob=True)


def test_fractional_grade_in_hive_folders_of_trec_qrels_is_refused(tmp_path, files):
    """trec_eval reads a TREC grade as an integer (1.5 would be 1 there): with hive keys beside the TREC files
    (where a column mapping applies), the grade is still refused, by its file and line."""
    for day, text in (("1", "q1 0 d1 1\n"), ("2", "q1 0 d2 0\nq1 0 d3 1.5\n")):
        (tmp_path / "qrels" / f"day={day}").mkdir(parents=True)
        (tmp_path / "qrels" / f"day={day}" / "qrels.txt").write_text(text)
    file = tmp_path / "qrels" / "day=2" / "qrels.txt"
    with pytest.raises(sm.SqlmetricsError, match=re.escape(f"file '{file}', line 2: column 'relevance' holds "
                                                           "'1.5', which is not an integer relevance grade")):
        sm.evaluate(tmp_path / "qrels", files / "run.txt", MEASURES, glob=True)


def test_s3_glob_of_text_objects(bucket, files, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the objects are copied to
    s3 = fsspec.filesystem("s3")
    for arm, rows in (("a", _run_rows(1)), ("b", _run_rows(2))):
        _write_text(tmp_path / f"{arm}.csv", rows, "csv")
        s3.put_file(str(tmp_path / f"{arm}.csv"), f"evals/text/arm={arm}/run.csv")
    got = sm.evaluate(f"{bucket}/qrels.txt", f"{bucket}/text/*/*.csv", MEASURES, glob=True,
                      columns={"run_name": "arm"})
    expected = sm.evaluate(files / "qrels.txt", {"a": files / "run.parquet", "b": files / "run2.parquet"}, MEASURES)
    for arm in ("a", "b"):
        assert got.aggregate[arm] == pytest.approx(expected.aggregate[arm], rel=1e-12)
    assert list(tmp_path.glob("sqlmetrics-input-*")) == []  # the copies are removed after the evaluation


def test_without_glob_a_star_is_part_of_one_file_name(tmp_path, files):
    """The default: `run*.parquet` is the file of that name, even when other files would match it."""
    shutil.copy(files / "run.parquet", tmp_path / "run*.parquet")
    shutil.copy(files / "run2.parquet", tmp_path / "run2.parquet")
    got = sm.evaluate(files / "qrels.txt", str(tmp_path / "run*.parquet"), MEASURES)
    _same(got, sm.evaluate(files / "qrels.txt", files / "run.parquet", MEASURES))
    with pytest.raises(sm.SqlmetricsError, match=r"no such file \(a name holding \* \? \[ \] \{ \} is one file; "
                                                 r"glob=True, --glob, reads it as a pattern\)"):
        sm.evaluate(files / "qrels.txt", str(tmp_path / "other*.parquet"), MEASURES)
    # A folder without glob is refused as before.
    with pytest.raises(sm.SqlmetricsError, match="is a folder, not a file"):
        sm.evaluate(files / "qrels.txt", tmp_path, MEASURES)

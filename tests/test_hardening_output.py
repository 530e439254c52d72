"""Output files, signals, leftovers, temporary folders and memory (issue 13): each case once did harm or
failed obscurely (a FIFO replaced, /proc written to, 0600 made 0644, Ctrl-C an "internal error", SIGTERM
leaving the spooled input behind, DuckDB spilling into ./.tmp, out of memory shown as a page of SQL)."""
import builtins
import os
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest

import sqlmetrics
from sqlmetrics import SqlmetricsError
from sqlmetrics.caches import Kept
from sqlmetrics.cli import common, main
from sqlmetrics.cli import evaluate as eval_command
from sqlmetrics.local import evaluate as local_evaluate
from sqlmetrics.results import AVERAGED
from sqlmetrics.local import output as local_output

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n"
RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.0 t\n"


@pytest.fixture
def files(tmp_path, monkeypatch):
    """qrels.txt and run.txt in tmp_path, the current directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return tmp_path


def run_cli(capsys, *argv) -> tuple:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def no_work(*args, **kwargs):
    raise AssertionError("the evaluation ran: the output should have been refused first")


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def big_run(folder: Path, queries: int, docs: int = 500) -> tuple:
    """(qrels, run) of `queries` lists of `docs` documents each, every 7th document judged."""
    rnd = random.Random(1)
    run, qrels = folder / "big.run", folder / "big.qrels"
    run.write_text("".join(f"q{q} Q0 d{d} {d + 1} {rnd.random():.6f} r\n" for q in range(queries) for d in range(docs)))
    qrels.write_text("".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(queries) for d in range(0, docs, 7)))
    return qrels, run


def child_env(tmpdir: Path) -> dict:
    """The environment of a child sqlmetrics whose TMPDIR is a folder of the test's own, to look for leftovers."""
    return dict(os.environ, TMPDIR=str(tmpdir))


# ---------------------------------------------------------------------------------------------- 1. one atomic writer

def special_targets(tmp_path: Path) -> dict:
    """Targets that are not regular files, each with the words the refusal uses."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder.csv").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))  # the socket file stays after the close
    os.symlink(tmp_path / "fifo", tmp_path / "fifo-link")
    return {"fifo": (tmp_path / "fifo", "FIFO"), "socket": (tmp_path / "sock", "socket"),
            "folder": (tmp_path / "folder", "is a folder"), "folder.csv": (tmp_path / "folder.csv", "is a folder"),
            # /dev/zero, not /dev/null, and no_work below stops the command before it writes: should the
            # refusal ever fail, no device is replaced
            "device": (Path("/dev/zero"), "character device"),
            "proc": (Path("/proc/version"), "under /proc"), "sys": (Path("/sys/kernel/new.csv"), "under /sys"),
            "fifo link": (tmp_path / "fifo-link", "FIFO")}


KINDS = ["fifo", "socket", "folder", "folder.csv", "device", "proc", "sys", "fifo link"]


@pytest.mark.parametrize("kind", KINDS)
def test_cli_output_refuses_what_is_not_a_regular_file_before_any_work(kind, files, capsys, monkeypatch):
    targets = special_targets(files)
    target, words = targets[kind]
    before = os.lstat(target).st_mode if target.exists() else None
    monkeypatch.setattr(eval_command, "evaluate", no_work)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-o", target)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"sqlmetrics eval: error: --output {str(target)!r} ")
    assert words in err
    assert (os.lstat(target).st_mode if target.exists() else None) == before  # untouched
    assert not list(files.glob(".*.tmp"))
    if kind == "fifo link":
        assert (files / "fifo-link").is_symlink()


@pytest.mark.parametrize("kind", KINDS)
def test_python_output_refuses_what_is_not_a_regular_file_before_any_work(kind, files, monkeypatch):
    targets = special_targets(files)
    target, words = targets[kind]
    monkeypatch.setattr(sqlmetrics.evaluation, "evaluate_local", no_work)
    with pytest.raises(SqlmetricsError, match=re.escape(f"output={str(target)!r}")) as e:
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
    assert words in str(e.value) and "\n" not in str(e.value)
    assert not list(files.glob(".*.tmp"))


def test_cli_sql_command_checks_its_output_too(files, capsys):
    (files / "folder").mkdir()
    code, out, err = run_cli(capsys, "sql", "-m", "AP", "-o", "folder")
    assert code == 2 and "--output 'folder' is a folder" in err


@pytest.mark.parametrize("how", ["cli", "python"])
def test_an_existing_output_keeps_its_permissions(how, files, capsys):
    target = files / "out.csv"
    target.write_text("old\n")
    target.chmod(0o640)  # neither the 0644 of a new file nor mkstemp's 0600
    if how == "cli":
        assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-f", "csv", "-o", target)[0] == 0
    else:
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
    assert target.read_text() != "old\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_python_output_gets_the_umask_permissions(files):
    target = files / "new.parquet"
    sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask()


@pytest.mark.parametrize("how", ["cli", "python"])
def test_a_symlinked_output_writes_the_links_target_and_keeps_the_link(how, files, capsys):
    (files / "results").mkdir()
    real = files / "results" / "out.csv"
    real.write_text("old\n")
    real.chmod(0o640)
    link = files / "out.csv"
    os.symlink(real, link)
    dangling = files / "new.csv"
    os.symlink(files / "results" / "new.csv", dangling)
    for target in (link, dangling):
        if how == "cli":
            assert run_cli(capsys, "eval", "qrels.txt", "run.txt", "-f", "csv", "-o", target)[0] == 0
        else:
            sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
        assert target.is_symlink()
    assert real.read_text().startswith(("run,query_id", '"query_id"'))
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert (files / "results" / "new.csv").is_file()
    assert sorted(p.name for p in (files / "results").iterdir()) == ["new.csv", "out.csv"]  # no temporaries


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(files, capsys, monkeypatch):
    """Ctrl-C while the output is written (here: at its fsync): exit 130, the old file, no .out.*.tmp."""
    target = files / "out.csv"
    target.write_text("old\n")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-o", target)
    assert code == 130 and err == "sqlmetrics eval: interrupted\n"
    with pytest.raises(KeyboardInterrupt):
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)
    assert target.read_text() == "old\n"
    assert not list(files.glob(".*.tmp"))


def test_a_signal_while_the_temporary_is_made_leaves_nothing(files, capsys, monkeypatch):
    """A SIGTERM inside mkstemp, after the file was made and before its name was returned, left .out.csv.*.tmp (3
    of 25 tries by hand): here the signal lands exactly there, as the temporary is created."""
    target = files / "out.csv"
    target.write_text("old\n")
    real_open = os.open

    def made_then_interrupted(path, flags, mode=0o777, *args, **kwargs):
        fd = real_open(path, flags, mode, *args, **kwargs)
        if str(path).endswith(".tmp") and flags & os.O_CREAT:
            os.close(fd)
            raise KeyboardInterrupt
        return fd

    monkeypatch.setattr(os, "open", made_then_interrupted)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-o", target)
    assert code == 130 and err == "sqlmetrics eval: interrupted\n"
    monkeypatch.undo()
    assert target.read_text() == "old\n" and not list(files.glob(".*.tmp"))


def test_both_layers_write_through_one_writer():
    assert common.replace_file is local_output.replace_file
    assert common.writable_target is local_output.writable_target


# ---------------------------------------------------------------------------------------------- 2. signals

def test_duckdb_interrupt_exits_130_with_one_line(files, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    monkeypatch.setattr(eval_command, "evaluate", interrupted)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt")
    assert code == 130 and out == "" and err == "sqlmetrics eval: interrupted\n"


def test_keyboard_interrupt_names_the_command(files, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_command, "evaluate", interrupted)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt")
    assert code == 130 and err == "sqlmetrics eval: interrupted\n"


def wait_for(predicate, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


# SIGTERM is the fast case: SIGINT takes the same way out (interrupt_queries, the same clean-up), in the full suite.
SIGNALS = [pytest.param(signal.SIGINT, 130, "interrupted", marks=pytest.mark.slow), (signal.SIGTERM, 143, "terminated")]


@pytest.mark.parametrize("number, code, word", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_standard_input_is_spooled_cleans_up(number, code, word, files):
    """The run arrives on stdin and the writer has not finished: a signal exits 128+n, removes the spool."""
    tmpdir = files / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "sqlmetrics", "eval", "qrels.txt", "-", "-o", "out.txt"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_env(tmpdir), cwd=files)
    try:
        proc.stdin.write(RUN.encode() * 30000)  # past the 64 KiB head: the spool file is made, then it waits
        proc.stdin.flush()
        wait_for(lambda: list(tmpdir.glob("sqlmetrics-*/stdin-*")))
        proc.send_signal(number)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.returncode == code, err
    assert err.decode() == f"sqlmetrics eval: {word}\n"
    assert list(tmpdir.iterdir()) == []
    assert sorted(p.name for p in files.iterdir()) == ["qrels.txt", "run.txt", "tmp"]


@pytest.mark.slow  # 1.3 s; the fast tier's SIGTERM: test_sigterm_while_the_output_is_written_leaves_no_temporary
@pytest.mark.parametrize("number, code, word", SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_duckdb_works_cleans_up(number, code, word, files):
    """A large run read from stdin, with a memory limit (DuckDB spills): the signal lands while DuckDB
    loads or evaluates; it stops at once, and neither the spool, the spill files nor an output remain."""
    tmpdir = files / "tmp"
    tmpdir.mkdir()
    qrels, run = big_run(files, 2000)
    with run.open("rb") as stdin:
        proc = subprocess.Popen([sys.executable, "-m", "sqlmetrics", "eval", qrels, "-", "-o", "out.json", "-f", "json",
                                 "--memory-limit", "60MB"],
                                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=child_env(tmpdir), cwd=files)
    try:
        # spill-N appears when DuckDB first spills: it is at work
        wait_for(lambda: list(tmpdir.glob("sqlmetrics-*/spill-*")) or proc.poll() is not None)
        proc.send_signal(number)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert err.decode() == f"sqlmetrics eval: {word}\n"
    assert list(tmpdir.iterdir()) == []
    assert not (files / "out.json").exists() and not list(files.glob(".*"))



def _takes_sigterm(pid: int) -> bool:
    """Whether the process has a handler of its own for SIGTERM (its caught-signals mask in /proc): Python sets none
    at start, so this is the moment sqlmetrics' first instructions have run."""
    try:
        caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", Path(f"/proc/{pid}/status").read_text(), re.M).group(1), 16)
    except (OSError, AttributeError):
        return False
    return bool(caught >> (signal.SIGTERM - 1) & 1)


def _signal_early(argv: list, number: int, delay: float, cwd: Path) -> tuple:
    """Start the command, send the signal `delay` s after sqlmetrics' first instructions ran: (exit, stdout, stderr)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, text=True)
    try:
        wait_for(lambda: _takes_sigterm(proc.pid) or proc.poll() is not None, timeout=60)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(number)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, out, err


EARLY_OUT = "measure     run\nP@1      1.0000\n" + AVERAGED["qrels"] + "\n"  # P@1 by hand: q1's d1 and q2's d3 are relevant


def _check_early(result: tuple, code: int, word: str) -> None:
    """Either the command finished before the signal (its whole output), or one line and 128 + the signal."""
    returncode, out, err = result
    if returncode == 0:
        assert out == EARLY_OUT and err == "", result
    else:
        assert (returncode, out, err) == (code, "", f"sqlmetrics eval: {word}\n"), result


def test_a_signal_in_the_first_instants_exits_with_one_line(files):
    """Ctrl-C while the command still imports (its first 0.1-0.3 s) printed a KeyboardInterrupt traceback and died of
    the signal (exit -2): now, from the package's first instruction on, one line and 130."""
    argv = [sys.executable, "-m", "sqlmetrics", "eval", "qrels.txt", "run.txt", "-m", "P@1"]
    returncode, out, err = _signal_early(argv, signal.SIGINT, 0.0, files)
    assert (returncode, out, err) == (130, "", "sqlmetrics eval: interrupted\n")


@pytest.mark.slow  # some sixty fresh interpreters
@pytest.mark.parametrize("number, code, word", SIGNALS, ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("entry", ["module", "script"])
def test_a_signal_at_any_instant_of_a_small_call_exits_with_one_line(number, code, word, entry, files):
    """A sweep of the instants of a whole small call, from its first instruction to its exit: at each, the command
    exits 128 + the signal with one line, or finishes with its whole output, never a traceback."""
    script = Path(sys.executable).with_name("sqlmetrics")
    start = [sys.executable, "-m", "sqlmetrics"] if entry == "module" else [str(script)]
    argv = [*start, "eval", "qrels.txt", "run.txt", "-m", "P@1"]
    for delay in [i * 0.02 for i in range(25)]:
        _check_early(_signal_early(argv, number, delay, files), code, word)


SIGTERM_DURING_WRITE = """
import os, signal, sys
from sqlmetrics.cli import main
real_fsync = os.fsync
def fsync(fd):
    os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, between the write and the rename
    real_fsync(fd)
os.fsync = fsync
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_while_the_output_is_written_leaves_no_temporary(files):
    tmpdir = files / "tmp"
    tmpdir.mkdir()
    (files / "out.csv").write_text("old\n")
    proc = subprocess.run([sys.executable, "-c", SIGTERM_DURING_WRITE, "eval", "qrels.txt", "run.txt", "-o", "out.csv"],
                          capture_output=True, text=True, env=child_env(tmpdir), cwd=files, timeout=60)
    assert proc.returncode == 143 and proc.stderr == "sqlmetrics eval: terminated\n"
    assert (files / "out.csv").read_text() == "old\n"
    assert not list(files.glob(".*")) and list(tmpdir.iterdir()) == []


# ---------------------------------------------------------------------------------------------- 3. the stdin spool

def test_stdin_is_spooled_into_the_process_folder_and_removed(files, capsys, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(files))
    seen = []
    real_evaluate = eval_command.evaluate

    def spying(qrels, run, *args, **kwargs):
        seen.extend(Path(p) for p in run.values())
        return real_evaluate(qrels, run, *args, **kwargs)

    monkeypatch.setattr(eval_command, "evaluate", spying)
    monkeypatch.setattr(sys, "stdin", _stdin(RUN.encode()))
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "-", "-m", "AP")
    assert code == 0, err
    folder = seen[0].parent
    assert folder.parent == files and re.fullmatch(rf"sqlmetrics-{os.getpid()}-\w+", folder.name)
    assert not seen[0].exists()  # the spool is gone; the folder stays for the process, removed at exit


def _stdin(data: bytes):
    import io
    return io.TextIOWrapper(io.BytesIO(data))


def test_a_full_disk_while_spooling_stdin_is_a_clear_error(files, capsys, monkeypatch):
    """/dev/full answers every write with ENOSPC: the spool file is opened there instead."""
    monkeypatch.setattr(sys, "stdin", _stdin(RUN.encode() * 10000))

    def full(fd, mode, *args, **kwargs):
        os.close(fd)
        return builtins.open("/dev/full", mode)

    monkeypatch.setattr(common, "open", full, raising=False)
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "-", "-m", "AP")
    folder = local_output.process_folder()
    assert code == 2 and err.count("\n") == 1
    assert f"no space left on device while saving standard input to {folder}; free space or set TMPDIR" in err
    assert not list(Path(folder).glob("stdin-*"))
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_stale_folders_of_dead_processes_are_removed_and_only_those(files):
    tmpdir = files / "tmp"
    tmpdir.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    keep = ["sqlmetrics-1-alive", "sqlmetrics-input-x", "sqlmetrics-stdin-x", "other", f"sqlmetrics-{dead.pid}x-y"]
    for name in [f"sqlmetrics-{dead.pid}-abc", *keep]:
        (tmpdir / name).mkdir()
        (tmpdir / name / "stdin-1.txt").write_text(RUN)
    (tmpdir / f"sqlmetrics-{dead.pid}-file").write_text("a file, not a folder of ours")
    proc = subprocess.run([sys.executable, "-m", "sqlmetrics", "eval", "qrels.txt", "-", "-m", "AP"], input=RUN,
                          capture_output=True, text=True, env=child_env(tmpdir), cwd=files, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmpdir.iterdir()) == sorted([*keep, f"sqlmetrics-{dead.pid}-file"])


# -------------------------------------------------------------------------------------------- 4. DuckDB's spill folder

@pytest.mark.parametrize("options", [{}, {"memory_limit": "1GB"}, {"threads": 1}])
def test_connections_spill_into_the_process_folder_and_never_download(options):
    con = local_evaluate.connect(**options)
    try:
        folder = Path(con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0])
        # sqlmetrics-<pid>-*/spill-N under the temporary directory (the shared database's was made when
        # first used, perhaps under another test's TMPDIR: its parent is checked by name)
        assert re.fullmatch(rf"sqlmetrics-{os.getpid()}-\w+", folder.parent.name) and folder.name.startswith("spill-")
        assert folder.is_absolute() and Path.cwd() not in folder.parents
        if options:
            assert folder.parent == Path(local_output.process_folder())
            assert folder.parent.parent == Path(tempfile.gettempdir())
        for name in ("autoinstall_known_extensions", "autoload_known_extensions"):
            assert con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0] is False
    finally:
        con.close()


def test_a_given_temp_directory_is_used(tmp_path):
    con = local_evaluate.connect(temp_directory=tmp_path / "spill")
    try:
        assert con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0] == str(tmp_path / "spill")
    finally:
        con.close()


def test_spilling_never_writes_into_the_current_directory(files):
    """24 MB is too little for 100,000 rows on one thread: DuckDB spills, into TMPDIR, never ./.tmp."""
    tmpdir = files / "tmp"
    tmpdir.mkdir()
    qrels, run = big_run(files, 200)
    proc = subprocess.run([sys.executable, "-m", "sqlmetrics", "eval", qrels, run, "-m", "AP,nDCG@10",
                           "--memory-limit", "24MB", "--threads", "1"],
                          capture_output=True, text=True, env=child_env(tmpdir), cwd=files, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in files.iterdir()) == ["big.qrels", "big.run", "qrels.txt", "run.txt", "tmp"]
    assert list(tmpdir.iterdir()) == []


# ---------------------------------------------------------------------------------------------- 5. memory and disk

@pytest.mark.parametrize("limit", ["1KB", "8MB"])
def test_out_of_memory_is_a_clear_error(limit, files, capsys):
    qrels, run = big_run(files, 200)
    with pytest.raises(SqlmetricsError, match=r"ran out of memory") as e:
        sqlmetrics.evaluate(qrels, run, ["AP"], memory_limit=limit, threads=1)
    message = str(e.value)
    assert f"memory_limit={limit!r}" in message and "temp_directory=" in message and "\n" not in message
    code, out, err = run_cli(capsys, "eval", qrels, run, "--memory-limit", limit, "--threads", "1")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"--memory-limit {limit}" in err and "Raise --memory-limit" in err and "--temp-directory" in err
    assert "memory_limit" not in err and "SELECT" not in err


def test_a_full_spill_disk_is_a_clear_error(files, monkeypatch):
    """max_temp_directory_size stands in for a full disk: DuckDB cannot spill, and says so."""
    real_connect = duckdb.connect

    def small_disk(*args, config=None, **kwargs):
        return real_connect(*args, config={**(config or {}), "max_temp_directory_size": "1MB"}, **kwargs)

    monkeypatch.setattr(duckdb, "connect", small_disk)
    qrels, run = big_run(files, 200)
    with pytest.raises(SqlmetricsError, match=r"ran out of disk space while spilling to temp_directory=") as e:
        sqlmetrics.evaluate(qrels, run, ["AP"], memory_limit="24MB", threads=1, temp_directory=files / "spill")
    assert repr(str(files / "spill")) in str(e.value) and "Free space there" in str(e.value)
    assert "\n" not in str(e.value)


def test_sql_duckdb_rejects_is_one_line_with_the_statement_kept(files, capsys, monkeypatch):
    class Broken:
        def sql(self, dialect, **options):
            return "SELECT no_such_column FROM no_such_table"

    monkeypatch.setattr(local_evaluate, "build_statement", lambda *args, **kwargs: Broken())
    monkeypatch.setattr(local_evaluate, "_STATEMENTS", Kept())  # not the statements generated before,
    monkeypatch.setenv("SQLMETRICS_CACHE_DIR", "")  # in this process or kept on disk
    with pytest.raises(local_evaluate.GeneratedSQLError) as e:
        sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"])
    assert "\n" not in str(e.value) and str(e.value).startswith("sqlmetrics generated SQL that DuckDB rejected: ")
    assert "SELECT" not in str(e.value) and e.value.sql == "SELECT no_such_column FROM no_such_table"
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt")
    assert code == 1 and err.count("\n") == 1 and "internal error" in err and "SELECT" not in err
    with pytest.raises(local_evaluate.GeneratedSQLError):
        main(["eval", "qrels.txt", "run.txt", "--debug"])
    assert "SELECT no_such_column FROM no_such_table" in capsys.readouterr().err  # --debug prints it


# ---------------------------------------------------------------------------------------------- 6. a folder as output

def test_python_output_a_folder_is_refused_before_any_work(files, monkeypatch):
    (files / "results").mkdir()
    (files / "results.parquet").mkdir()
    monkeypatch.setattr(sqlmetrics.evaluation, "evaluate_local", no_work)
    for target in ("results", "results.parquet", files / "results.parquet"):
        with pytest.raises(SqlmetricsError, match="is a folder; give a file name"):
            sqlmetrics.evaluate("qrels.txt", "run.txt", ["AP"], output=target)


def test_cli_output_a_folder_is_refused(files, capsys):
    (files / "out.json").mkdir()
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-f", "json", "-o", "out.json")
    assert code == 2 and err == "sqlmetrics eval: error: --output 'out.json' is a folder; give a file name.\n"


def test_dev_stdout_is_standard_output_and_links_through_proc_are_refused(files, capsys, tmp_path):
    """-o /dev/stdout means standard output: written to, never replaced by a renamed file (when the shell
    sent standard output to a file, /dev/stdout leads through /proc/self/fd/1 to that ordinary file)."""
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "P@1", "-o", "/dev/stdout")
    assert code == 0 and out.split("\n")[0].split() + out.split("\n")[1].split() == ["measure", "run", "P@1", "1.0000"], err
    os.symlink("/proc/self/fd/1", tmp_path / "out-link")
    code, out, err = run_cli(capsys, "eval", "qrels.txt", "run.txt", "-m", "P@1", "-o", tmp_path / "out-link")
    assert code == 2 and out == "" and "is under /proc" in err

"""The `sqlmetrics` command: its console script (`sqlmetrics.__main__:command`) and `python -m sqlmetrics`.

Its first instructions take Ctrl-C and SIGTERM, before the imports that fill the first 0.1-0.3 s of a call (DuckDB,
the command's own modules): a signal then ends the process at once with one line and 130 or 143, as a signal during
the work does (cli/main.py's _Signals takes the signals over for the work itself, and hands them back after it).
At once, not by raising KeyboardInterrupt: raised inside an extension's initialisation (DuckDB's, as it is
imported), an exception can abort the whole process (exit -6, a traceback); and before the work nothing needs
undoing but what the exit handlers undo."""
import atexit
import contextlib
import gc
import os
import signal
import sys


def _end(code: int) -> None:
    """The exit handlers (the package's temporary folders), the streams flushed, and the process ends with `code`:
    without the interpreter's own exit, which kills the process with SIGINT (exit -2, whatever status it was given)
    once a KeyboardInterrupt has passed through Python code run from C, as some extensions' imports run it."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that left, a closed stream: nothing to lose
            stream.flush()
    os._exit(code)


def _stop(number, frame) -> None:
    """A signal outside the work: one line, and the end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second one must not cut the exit handlers short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    named = f" {sys.argv[1]}" if len(sys.argv) > 1 and sys.argv[1].replace("-", "_").isidentifier() else ""
    with contextlib.suppress(OSError, ValueError):
        print(f"sqlmetrics{named}: {'terminated' if number == signal.SIGTERM else 'interrupted'}", file=sys.stderr)
    _end(128 + number)


for _number in (signal.SIGINT, signal.SIGTERM):
    signal.signal(_number, _stop)

from .cli.main import main  # noqa: E402 - after the signals are taken: this import is most of a small call's time


def command() -> None:
    """main(), then the process exits. What the call built is left for the exit as it is: gc.freeze() spares the
    interpreter's teardown a full cyclic collection over it (13 ms of a 0.24 s `sqlmetrics trec_eval`). main()
    alone, called in a notebook or a test, leaves the collector and the signals be."""
    code = main()
    for number in (signal.SIGINT, signal.SIGTERM):  # the output is written: the exit is not to be cut short
        signal.signal(number, signal.SIG_IGN)
    if code in (128 + signal.SIGINT, 128 + signal.SIGTERM):  # _Signals raised KeyboardInterrupt in the work
        _end(code)
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    command()

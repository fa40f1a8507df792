"""Entry-point plumbing: user errors become one line on stderr and a non-zero exit."""
import contextlib
import importlib
import os
import select
import signal
import sys
import threading

from onmt.errors import PEER_EXIT, OptionError, PeerStopped, Stopped, Terminated, UserError


def run_main(main_fn, argv=None):
    """Run `main_fn(argv)`; a UserError, OptionError, OSError (a missing file, a full disk...), ^C
    or a stop on a signal (Stopped) exits non-zero in one line; a closed stdout pipe exits quietly
    (141)."""
    prog = sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "onmt"
    try:
        with sigterm_unwinds():
            main_fn(argv)
    except PeerStopped as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # not sys.exit: gloo's threads, still tied to the dead peer, abort a normal exit
        os._exit(PEER_EXIT)
    except (UserError, OptionError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(1)
    except FileNotFoundError as e:
        print(f"{prog}: error: no such file: {e.filename}", file=sys.stderr)
        sys.exit(1)
    except PermissionError as e:
        print(f"{prog}: error: permission denied: {e.filename}", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        quiet_broken_pipe()
    # a full disk, a folder where a file should be, ...: one line naming the file
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"{prog}: error: {where}{e.strerror or e}", file=sys.stderr)
        sys.exit(1)
    except Stopped as e:
        print(f"{prog}: {e}", file=sys.stderr)
        sys.exit(e.code)
    except Terminated as e:
        print(f"{prog}: {e.line}", file=sys.stderr)
        sys.exit(e.code)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)


def _terminate(signum, frame):
    raise Terminated(signum)


# what ends a command as SIGTERM does: SIGHUP is a closed terminal or a dropped ssh session
TERMINATING = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def sigterm_unwinds():
    """SIGTERM and SIGHUP unwind as ^C does (Terminated, a KeyboardInterrupt) while the block runs:
    the files being written aside are removed (files.AtomicFile), run_main prints one line and
    exits 143 (SIGHUP: 129). Before, every command but preprocess.py and the prepare tools died at
    once, silently, leaving its temporary files (and SIGHUP everywhere). A signal whose handler is
    already set (training's utils/stop.py sets its own inside) or a thread other than the main one:
    left as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _terminate) for s in TERMINATING
                if signal.getsignal(s) is signal.SIG_DFL}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def signals_end_at_once(prog):
    """While the block runs, SIGTERM and SIGINT print `prog`'s one line and end the process at once
    (143, 130), raising nothing. For the imports: torch's C extension imports numpy and takes an
    exception raised inside that import for a missing numpy, so a signal turned into an exception
    there was lost (the command went on); raised inside C++ it can abort the process. Nothing is
    written during the imports, so nothing is left to remove."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum, frame):
        line = "interrupted" if signum == signal.SIGINT else Terminated(signum).line
        os.write(2, f"{prog}: {line}\n".encode())
        os._exit(128 + signum)
    previous = {s: signal.signal(s, end) for s in (*TERMINATING, signal.SIGINT)
                if signal.getsignal(s) is not signal.SIG_IGN or s != signal.SIGHUP}   # nohup's
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def launch(module):
    """The start of the scripts train.py, translate.py, ...: import `module` (torch and all) and
    `run_main` its main; a ^C or SIGTERM during the imports is one line and exit 130 or 143."""
    prog = sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "onmt"
    try:
        with signals_end_at_once(prog):
            main_fn = importlib.import_module(module).main
    except KeyboardInterrupt as e:
        print(f"{prog}: {e.line if isinstance(e, Terminated) else 'interrupted'}",
              file=sys.stderr)
        sys.exit(e.code if isinstance(e, Terminated) else 130)
    run_main(main_fn)
    # the command is done and its outputs whole: a stop signal during the interpreter's exit
    # (torch's takes a while) would only kill it by the default action (no word), so it is ignored
    for s in (*TERMINATING, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)


def _stdout_closed():
    """Whether stdout is a pipe whose reader has gone (`... | head -1`)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def quiet_broken_pipe():
    """The reader of stdout has gone (`... | head -1`): exit as a Unix filter does, silently, with
    the status of a death by SIGPIPE (141); stdout goes to /dev/null so that Python's own flush at
    exit does not print another BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        pass
    sys.exit(141)

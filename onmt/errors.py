"""The toolkit's own exceptions: what the entry points print as one line, without a traceback.

    UserError     bad input (a file, a line, a checkpoint) or an impossible request
    PeerStopped   (a UserError) another process of a distributed run stopped
    OptionError   an invalid option or combination of options (a ValueError, as argparse's own)
    Stopped       a run stopped by a signal after saving its work

Every layer may raise them; `onmt.utils.cli.run_main` turns them into `prog: error: ...` and an exit
status. This module imports nothing, so that the data layer does not pull in the option parser.
"""


class UserError(Exception):
    """Bad input or options: printed as one line, no traceback."""


class PeerStopped(UserError):
    """Another process of a distributed run is gone: printed as one line, then this process ends at
    once (its communication threads, waiting on the dead peer, would abort the interpreter's
    exit), with PEER_EXIT, so that a launcher can tell the rank that failed from those it took
    with it."""


PEER_EXIT = 3


class OptionError(ValueError):
    """An invalid combination of options; the entry points print it as one line."""


class Stopped(Exception):
    """A run stopped by a signal after saving its work: `str(e)` is printed as one line, the exit
    status is `code` (128 + the signal's number)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP: a closed terminal, a dropped ssh session) turned into an interruption,
    which unwinds as for ^C: `line` is what the entry point prints, exit status `code` (143 for
    SIGTERM, 129 for SIGHUP)."""

    NAMES = {15: "SIGTERM", 1: "SIGHUP"}

    def __init__(self, signum=15):
        super().__init__(signum)
        self.signum, self.code = int(signum), 128 + int(signum)
        self.line = f"terminated ({self.NAMES.get(self.signum, f'signal {self.signum}')})"

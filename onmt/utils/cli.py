"""Entry-point plumbing: user errors become one line on stderr and a non-zero exit."""
import sys

from onmt.opts import OptionError


class UserError(Exception):
    """Bad input or options: printed as one line, no traceback."""


def run_main(main_fn, argv=None):
    """Run `main_fn(argv)`; a UserError, OptionError, missing file or ^C exits non-zero in one line."""
    prog = sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "onmt"
    try:
        main_fn(argv)
    except (UserError, OptionError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(1)
    except FileNotFoundError as e:
        print(f"{prog}: error: no such file: {e.filename}", file=sys.stderr)
        sys.exit(1)
    except PermissionError as e:
        print(f"{prog}: error: permission denied: {e.filename}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        sys.exit(130)

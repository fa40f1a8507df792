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


def start(parser, validate, argv=None):
    """The common start of train and translate: parse and validate the options, start the log and the
    allocator setting (memory.py). Returns (opt, torch.device of -gpu)."""
    import torch

    from onmt.utils.logging import init_logger
    from onmt.utils.memory import reuse_freed_memory
    from onmt.opts import parse_with_given
    opt = parse_with_given(parser, argv)
    init_logger(opt.log_file)
    reuse_freed_memory()
    validate(opt)
    return opt, torch.device(f"cuda:{opt.gpu}" if opt.gpu >= 0 else "cpu")

"""Output files: checked before the work starts, written whole or not at all.

`check_output(path, what, kind, overwrite)` raises a one-line UserError when `path` cannot be
written (its folder is missing, is not a folder or is read-only; the path itself is a folder), so
that a command fails in its first second rather than after hours of work, or when it is an existing
file that is not the command's `kind` of output, or is a checkpoint, a dataset's file or a corpus,
without -overwrite (the one output rule: utils/output_rule.py); `check_not_inputs` when an output
is one of the command's inputs (by any spelling or link); `check_prefix` does the same for a prefix
of files (train.py -save_model), `check_output_folder` for a folder of outputs (-attn_plot).

Every file the toolkit writes goes through `AtomicFile` (a temporary file in the target's folder,
renamed onto the target when complete), so a reader never sees a half-written file; a failure (a
full disk, ^C included) leaves the target as it was, no temporary file, and one line naming the file
(`write_error`). A target that is not a regular file (`-` for standard output, a FIFO, a character
device such as /dev/null, /dev/stdout or a link to one) is written through instead, never renamed
over: a pipe gets the output, and the device stays a device (`is_stream`).
`write_atomic(path, write)` is the common form (`write(f)` fills the file); `write_text_atomic` /
`write_lines_atomic` write strings."""
import contextlib
import os
import re
import shutil
import stat
import tempfile

from onmt.errors import UserError
from onmt.utils.output_rule import check_replaceable


def descriptor_of(path):
    """The file descriptor that writing `path` means writing to: 1 for `-`, N for /dev/stdout,
    /dev/stderr, /dev/fd/N, /proc/self/fd/N or a link to one of them (the process's own standard
    output even when it is redirected into a regular file); None for any other path."""
    path = os.fspath(path)
    if path == "-":
        return 1
    named = {"/dev/stdout": 1, "/dev/stderr": 2}
    pattern = re.compile(rf"^/(?:dev/fd|proc/(?:self|{os.getpid()})/fd)/(\d+)$")
    for _ in range(40):                      # a chain of links, followed one at a time
        spelled = os.path.normpath(os.path.abspath(path))
        if spelled in named:
            return named[spelled]
        match = pattern.match(spelled)
        if match:
            return int(match.group(1))
        if not os.path.islink(spelled):
            return None
        path = os.path.join(os.path.dirname(spelled), os.readlink(spelled))
    return None


def is_stream(path):
    """Whether writing `path` means writing through it rather than replacing it: `-` (standard
    output), a descriptor of this process (/dev/stdout, /dev/stderr, /dev/fd/N, even redirected into
    a regular file: `descriptor_of`), or an existing path (links followed) that is not a regular
    file or a folder (a FIFO, a character device, a socket: /dev/null)."""
    if descriptor_of(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_output(path, what, kind=None, overwrite=False):
    """UserError naming `what` (e.g. "-output pred.txt") unless `path` could be created or replaced
    (or, `is_stream`, written through); with a `kind` of output (output_rule.KINDS) and no
    `overwrite`, an existing file must also be one the rule lets that kind replace."""
    if is_stream(path):
        if os.fspath(path) != "-" and not os.access(path, os.W_OK):
            raise UserError(f"{what}: {path} is not writable")
        return
    if os.path.isdir(path):
        raise UserError(f"{what}: {path} is a folder, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{what}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{what}: folder {folder} is not writable")
    if kind is not None and not overwrite:
        check_replaceable(path, what, kind)


def same_file(a, b):
    """Whether paths `a` and `b` name one file, by any spelling or link (hard links included); a
    path that does not exist yet is compared by its resolved name."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_not_inputs(outputs, inputs):
    """UserError when one of `outputs` ({"-output": path, ...}; None or "" for an option not given)
    is one of `inputs` ({"-model": path, "-src": path or [paths], ...}): a command never writes over
    what it reads."""
    def paths(v):
        return [p for p in (v if isinstance(v, (list, tuple)) else [v]) if p]
    for out_what, out in outputs.items():
        for out_path in paths(out):
            for in_what, value in inputs.items():
                for in_path in paths(value):
                    if same_file(out_path, in_path):
                        raise UserError(f"{out_what} {out_path} is this command's {in_what} "
                                        f"{in_path}: writing it would destroy the input; "
                                        f"give {out_what} another file")


def check_distinct_outputs(outputs):
    """UserError when two of `outputs` ({"-output": path, "-attn_debug": path, ...}; None or "" for
    an option not given) name one file (by any spelling or link): one would be lost. Standard output
    (`-`) may be shared."""
    given = [(what, path) for what, path in outputs.items() if path and os.fspath(path) != "-"]
    for i, (what_a, a) in enumerate(given):
        for what_b, b in given[i + 1:]:
            if same_file(a, b):
                raise UserError(f"{what_a} and {what_b} are both {a}: one output would be lost; "
                                "give each its own file")


def check_not_prefix_files(outputs, prefix, what, names):
    """UserError when one of `outputs` ({"-log_file": path, ...}) is, by any spelling or link, a
    file the run writes, replaces or removes under `prefix` (`what`, e.g. "-save_model runs/m"): one
    in the prefix's folder whose name `names` (a compiled pattern) matches. Streams (`-`, /dev/null)
    are never replaced."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(prefix)))
    for out_what, path in outputs.items():
        if not path or is_stream(path):
            continue
        real = os.path.realpath(path)
        if os.path.dirname(real) == folder and names.match(os.path.basename(real)):
            raise UserError(f"{out_what} {path} is one of the files of {what}, which the run "
                            f"writes over or removes: give {out_what} another file")


def process_alive(pid):
    """Whether process `pid` exists on this machine (a process of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


@contextlib.contextmanager
def prefix_lock(prefix, what):
    """Hold `{prefix}.lock` while a run writes the files of `prefix` (train.py -save_model,
    preprocess.py -save_data): a second writer is refused in one line naming `what`. The lock holds
    the owner's process id; one left by a process that no longer exists (killed) is taken over."""
    path = f"{prefix}.lock"
    folder = os.path.dirname(os.path.abspath(path))
    created = not os.path.isdir(folder)
    # the run would create it: made now for the lock, removed again if left empty
    if created:
        try:
            os.makedirs(folder)
        except OSError as e:
            raise UserError(f"{what}: cannot create folder {folder}: {e.strerror or e}") from None
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path, encoding="utf-8") as f:
                    owner = f.read().strip()
            except OSError:
                owner = ""
            if owner.isdigit() and process_alive(int(owner)) and int(owner) != os.getpid():
                raise UserError(f"{what}: another run (process {owner}) is writing {prefix}*; "
                                f"wait for it to end or give another {what.split()[0]}") from None
            with contextlib.suppress(OSError):
                os.remove(path)           # a stale lock: its process is gone
            continue
        except OSError as e:
            raise UserError(f"{what}: cannot create {path}: {e.strerror or e}") from None
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        break
    else:
        raise UserError(f"{what}: cannot take the lock {path}")
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            with open(path, encoding="utf-8") as f:
                mine = f.read().strip() == str(os.getpid())
            if mine:
                os.remove(path)
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(folder)      # only if the run left it empty


def check_output_folder(path, what):
    """UserError naming `what` (e.g. "-attn_plot plots") unless `path` is a folder or could be
    created as one (`check_output` on it)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"{what}: not a folder")
    if not os.path.isdir(path):
        check_output(path, what)


def check_prefix(prefix, what):
    """UserError naming `what` (e.g. "-save_model runs/m") unless files `prefix`_... could be
    written: the prefix names no folder, and its folder exists and is writable or could be created
    (its nearest existing ancestor is a writable folder). Nothing is created."""
    if not prefix or prefix.endswith(("/", os.sep)) or os.path.isdir(prefix):
        example = os.path.join(prefix.rstrip("/" + os.sep) or ".", "model")
        raise UserError(f"{what}: {prefix} is a folder; "
                        f"give a prefix of file names such as {example}")
    folder = os.path.dirname(os.path.abspath(prefix))
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"{what}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{what}: folder {existing} is not writable")
    # what os.access cannot tell: a read-only mount, /proc, root's rights
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test", dir=existing)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise UserError(f"{what}: cannot write into folder {existing}: {e.strerror or e}") from None


def write_error(path, error, what=None):
    """The one-line UserError of a failed write of `path` (e.g. "... cannot write X: No space left
    on device"); `what` names the option or the kind of file."""
    reason = getattr(error, "strerror", None)
    if not reason:
        text = str(error).strip()
        reason = text.splitlines()[0] if text else type(error).__name__
    return UserError(f"{what + ': ' if what else ''}cannot write {path}: {reason}")


class AtomicFile:
    """A file written whole or not at all: a temporary file in the folder of `path`, open for
    writing as `.file` (text: UTF-8 with "\\n" line ends; bytes when `binary`), renamed onto `path`
    by `commit()` and removed by `discard()`. As a with-block (`with AtomicFile(p) as f:`) it
    commits when the block completes and discards on any exception, ^C included. An OSError (a full
    disk, a read-only folder; inside the with-block too) leaves `path` as it was and no temporary
    file, and is raised as `write_error`'s one-line UserError naming `what` and `path`. The file
    gets the permissions that open() gives a new file (the process's umask), not the temporary
    file's 0o600."""

    def __init__(self, path, what=None, binary=False):
        self.path, self.what = os.fspath(path), what
        self.file = self.tmp = None
        self.stream = is_stream(self.path)
        if self.stream:    # written through: standard output, a FIFO, a device
            with self._discarded_on_error():
                own = descriptor_of(self.path)
                fd = os.dup(own) if own is not None else os.open(self.path, os.O_WRONLY)
                self.file = (os.fdopen(fd, "wb") if binary
                             else os.fdopen(fd, "w", encoding="utf-8", newline="\n"))
            return
        # a link to a regular file stays a link: its target is the file replaced
        self.target = os.path.realpath(self.path) if os.path.islink(self.path) else self.path
        with self._discarded_on_error():
            fd, self.tmp = tempfile.mkstemp(prefix=os.path.basename(self.target) + ".",
                                            suffix=".tmp",
                                            dir=os.path.dirname(os.path.abspath(self.target)))
            # a Python file over the descriptor: a write error is an OSError (ENOSPC...),
            # whoever writes
            self.file = (os.fdopen(fd, "wb") if binary
                         else os.fdopen(fd, "w", encoding="utf-8", newline="\n"))

    @contextlib.contextmanager
    def _discarded_on_error(self):
        """On any exception, remove the temporary file; an OSError becomes
        write_error's one line."""
        try:
            yield
        except BaseException as e:
            self.discard()
            if isinstance(e, OSError):
                raise write_error(self.path, e, self.what) from None
            raise

    def close(self):
        """Complete the temporary file (flushed and closed), for `commit` to rename later."""
        with self._discarded_on_error():
            self.file.close()

    def commit(self):
        """Complete the temporary file and rename it onto `path` (a stream: flush and close it)."""
        with self._discarded_on_error():
            self.file.close()
            if self.stream:
                return
            os.chmod(self.tmp, _new_file_mode())
            os.replace(self.tmp, self.target)
        self.tmp = None

    def discard(self):
        """Close and remove the temporary file
        (never raises an OSError; nothing to do after commit)."""
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
        if self.tmp is not None:
            try:
                os.remove(self.tmp)
            except OSError:
                pass
            self.tmp = None

    def __enter__(self):
        return self.file

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
            return False
        failure = self._write_failure(exc)
        self.discard()
        if failure is not None:
            raise write_error(self.path, failure, self.what) from None
        return False

    def _write_failure(self, exc):
        """The OSError behind the exception `exc` of a with-block: `exc` itself, or for another
        Exception (torch.save reports a full disk as RuntimeError "unexpected pos") the OSError it
        arose from or the one that closing the file raises; None when there is none (^C, a bug)."""
        if isinstance(exc, OSError) or not isinstance(exc, Exception):
            return exc if isinstance(exc, OSError) else None
        if isinstance(exc.__context__, OSError):
            return exc.__context__
        try:
            self.file.close()
        except OSError as e:
            return e
        return None


def _new_file_mode():
    """The permissions open() gives a new file: 0o666 less the process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path, write, what=None, binary=False, by_name=False):
    """Call `write(f)` with `f` open on the temporary file of an AtomicFile for `path` (text, or
    bytes when `binary`), then rename it onto `path`; `by_name`: `write(name)` with the temporary
    file's name instead, for a writer that opens the file itself. Errors as AtomicFile's."""
    out = AtomicFile(path, what, binary)
    with out as f:
        if by_name and out.stream:
            # the writer may itself write a temporary file and rename it onto the name it is given
            # (torch's Chrome trace does): it gets a name in a private folder, copied through
            with tempfile.TemporaryDirectory() as folder:
                name = os.path.join(folder, os.path.basename(out.path) or "out")
                write(name)
                with open(name, "rb") as src:
                    f.flush()
                    shutil.copyfileobj(src, f.buffer if hasattr(f, "buffer") else f)
        elif by_name:
            f.close()
            write(out.tmp)
        else:
            write(f)


def write_text_atomic(path, text, what=None):
    """Write `text` (UTF-8) to `path` whole or not at all (`write_atomic`)."""
    write_atomic(path, lambda f: f.write(text), what)


def write_lines_atomic(path, lines, what=None):
    """Write the strings `lines`, each followed by "\\n", to `path` whole or not at all
    (`write_atomic`)."""
    def write(f):
        for line in lines:
            f.write(line + "\n")
    write_atomic(path, write, what)

"""Output files: checked before the work starts, written whole or not at all.

`check_output(path, what)` raises a one-line UserError when `path` cannot be written (its folder is
missing, is not a folder or is read-only; the path itself is a folder), so that a command fails in its
first second rather than after hours of work; `check_prefix` does the same for a prefix of files
(train.py -save_model). `write_text_atomic` / `write_lines_atomic` write to a temporary file next to
the target and rename it into place, so a reader never sees a half-written file; a failure (a full
disk included) leaves the target as it was, no temporary file, and one line naming the file
(`write_error`).
"""
import os
import tempfile

from onmt.errors import UserError


def check_output(path, what):
    """UserError naming `what` (e.g. "-output pred.txt") unless `path` could be created or replaced."""
    if os.path.isdir(path):
        raise UserError(f"{what}: {path} is a folder, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{what}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{what}: folder {folder} is not writable")


def check_prefix(prefix, what):
    """UserError naming `what` (e.g. "-save_model runs/m") unless files `prefix`_... could be written:
    the prefix names no folder, and its folder exists and is writable or could be created (its nearest
    existing ancestor is a writable folder). Nothing is created."""
    if not prefix or prefix.endswith(("/", os.sep)) or os.path.isdir(prefix):
        example = os.path.join(prefix.rstrip("/" + os.sep) or ".", "model")
        raise UserError(f"{what}: {prefix} is a folder; give a prefix of file names such as {example}")
    folder = os.path.dirname(os.path.abspath(prefix))
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"{what}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{what}: folder {existing} is not writable")
    try:                            # what os.access cannot tell: a read-only mount, /proc, root's rights
        fd, probe = tempfile.mkstemp(prefix=".write-test", dir=existing)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise UserError(f"{what}: cannot write into folder {existing}: {e.strerror or e}") from None


def write_error(path, error, what=None):
    """The one-line UserError of a failed write of `path` (e.g. "... cannot write X: No space left on
    device"); `what` names the option or the kind of file."""
    reason = getattr(error, "strerror", None)
    if not reason:
        text = str(error).strip()
        reason = text.splitlines()[0] if text else type(error).__name__
    return UserError(f"{what + ': ' if what else ''}cannot write {path}: {reason}")


def write_text_atomic(path, text, what=None):
    """Write `text` (UTF-8) to `path` through a temporary file renamed when complete; a failure (a full
    disk included) leaves `path` as it was and no temporary file, and is raised as one-line UserError."""
    write_lines_atomic(path, [text], what, newline=False)


def write_lines_atomic(path, lines, what=None, newline=True):
    """Write the strings `lines` (each followed by "\\n" when `newline`) as `write_text_atomic` does."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            for line in lines:
                f.write(line + "\n" if newline else line)
        os.replace(tmp, path)
    except OSError as e:
        raise write_error(path, e, what) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)

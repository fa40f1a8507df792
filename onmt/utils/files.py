"""Output files: checked before the work starts, written whole or not at all.

`check_output(path, what)` raises a one-line UserError when `path` cannot be written (its folder is
missing, is not a folder or is read-only; the path itself is a folder), so that a command fails in its
first second rather than after hours of work. `write_text_atomic` writes to a temporary file next to
the target and renames it into place, so a reader never sees a half-written file.
"""
import os

from onmt.utils.cli import UserError


def check_output(path, what):
    """UserError naming `what` (e.g. "-output pred.txt") unless `path` could be created or replaced."""
    if os.path.isdir(path):
        raise UserError(f"{what}: {path} is a folder, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{what}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{what}: folder {folder} is not writable")


def write_text_atomic(path, text, what=None):
    """Write `text` (UTF-8) to `path` through a temporary file renamed when complete; a failure (a full
    disk included) leaves `path` as it was and no temporary file, and is raised as one-line UserError."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise UserError(f"{what or path}: cannot write {path}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)

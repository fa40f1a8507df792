"""init_logger: one "onmt" logger, to stderr and -log_file, rank 0 at INFO and the others at WARNING;
calling it again replaces its handlers instead of adding more."""
import logging
import os
import sys

import pytest

from onmt.utils.logging import init_logger, logger


@pytest.fixture
def restored_logger():
    saved = list(logger.handlers), logger.level, logger.propagate
    yield
    for h in logger.handlers:
        if h not in saved[0]:
            h.close()
    logger.handlers[:], logger.level, logger.propagate = saved


def test_rank_0_logs_to_stderr_and_the_log_file(tmp_path, capsys, restored_logger):
    path = tmp_path / "run.log"
    assert init_logger(str(path)) is logger and logger.name == "onmt"
    logger.info("step %d", 7)
    for h in logger.handlers:
        h.flush()
    err = capsys.readouterr().err
    assert err.endswith("INFO] step 7\n") and err.startswith("[")
    assert path.read_text() == err       # the same line, same format
    init_logger(str(path))
    init_logger("")
    assert len(logger.handlers) == 1 and not logger.propagate   # replaced, not added


def test_other_ranks_log_only_warnings(tmp_path, capsys, restored_logger):
    init_logger("", rank=1)
    logger.info("not shown")
    logger.warning("shown")
    err = capsys.readouterr().err
    assert "not shown" not in err and "WARNING] shown" in err
    assert logger.level == logging.WARNING


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("where", ["file", "stdout"])
def test_a_log_that_cannot_be_written_is_dropped_with_one_warning(capsys, restored_logger, monkeypatch, where):
    """-log_file on a full disk printed a `--- Logging error ---` traceback for every line."""
    if where == "stdout":
        monkeypatch.setattr(sys, "stdout", open("/dev/full", "w"))
    init_logger("/dev/full" if where == "file" else "-")
    for i in range(5):
        logger.info("line %d", i)
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert "Logging error" not in err and "Traceback" not in err
    assert len(warnings) == 1 and "No space left on device" in warnings[0], err
    assert ("-log_file /dev/full" if where == "file" else "-log_file - (standard output)") in warnings[0]
    assert sum("INFO] line" in line for line in err.splitlines()) == 5   # stderr keeps every line
    assert len(logger.handlers) == 1


def test_an_error_of_formatting_stays_logging_s_own(tmp_path, capsys, restored_logger):
    init_logger(str(tmp_path / "run.log"))
    logger.info("%d", "not a number")
    assert "Logging error" in capsys.readouterr().err and len(logger.handlers) == 2


@pytest.mark.skipif(not os.path.exists("/proc/version"), reason="needs /proc")
def test_a_log_file_that_cannot_be_appended_to_is_named(restored_logger):
    """/proc/version opened for appending fails with EINVAL and no file name: run_main printed
    `error: Invalid argument`."""
    with pytest.raises(OSError) as exc:
        init_logger("/proc/version")
    assert exc.value.filename == "/proc/version"

"""init_logger: one "onmt" logger, to stderr and -log_file, rank 0 at INFO and the others at WARNING;
calling it again replaces its handlers instead of adding more."""
import logging

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

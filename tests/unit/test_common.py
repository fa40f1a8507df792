"""The shared start of train.py and translate.py (onmt/bin/common.py): parse, update, the log (never one
of the inputs), validation, then the allocator setting (for a CPU run); the device of -gpu."""
import pytest
import torch

from onmt import opts
from onmt.bin.common import start
from onmt.errors import UserError
from onmt.utils import memory
from onmt.utils.logging import logger


@pytest.fixture
def steps(monkeypatch):
    """The order of what start() does, with the allocator setting recorded instead of made."""
    done = []
    monkeypatch.setattr(memory, "reuse_freed_memory", lambda: done.append("memory"))
    saved = list(logger.handlers), logger.level, logger.propagate
    yield done
    for h in logger.handlers:
        if h not in saved[0]:
            h.close()
    logger.handlers[:], logger.level, logger.propagate = saved


def test_parse_update_log_then_validate(tmp_path, steps):
    src, log = tmp_path / "src.txt", tmp_path / "run.log"
    src.write_text("a b\n")

    def update(opt):
        steps.append(("update", opt.beam_size))
        opt.beam_size = 2

    def validate(opt):
        steps.append(("validate", opt.beam_size, log.exists()))
    opt, device = start(opts.translate_parser(), update, validate,
                        ["-model", "m.pt", "-src", str(src), "-beam_size", "4", "-log_file", str(log)],
                        inputs=lambda o: {"-src": o.src})
    assert steps == [("update", 4), ("validate", 2, True), "memory"]   # the log is open when validation runs
    assert opt.beam_size == 2 and device == torch.device("cpu")


def test_the_log_may_not_be_an_input(tmp_path, steps):
    src = tmp_path / "src.txt"
    src.write_text("a b\n")
    with pytest.raises(UserError, match="-log_file"):
        start(opts.translate_parser(), lambda opt: None, lambda opt: steps.append("validate"),
              ["-model", "m.pt", "-src", str(src), "-log_file", str(src)], inputs=lambda o: {"-src": o.src})
    assert steps == [] and src.read_text() == "a b\n"

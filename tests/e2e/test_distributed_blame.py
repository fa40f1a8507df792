"""A failed distributed run names the rank that failed (issue 53): a rank taken down by its peer's
failure exits PEER_EXIT, and the launcher lets the failing rank end before it names one."""
import os

import pytest

from onmt.errors import UserError
from onmt.utils import distributed

DEADLINE_S = 120


def _rank_0_fails_slowly(folder):
    """Rank 0 fails (a full disk while saving) and takes a moment to leave (its error printed, the
    process group left); rank 1, whose peer is gone, ends at once with PEER_EXIT."""
    import atexit
    import time

    from onmt.errors import PeerStopped
    if os.environ["RANK"] == "0":
        atexit.register(time.sleep, 1.0)
        raise UserError("-save_model m: No space left on device")
    time.sleep(0.2)
    raise PeerStopped("rank 1 of 2: another process of this run stopped (Connection closed by peer)")


def test_the_rank_that_failed_is_named_not_the_one_it_took_down(tmp_path):
    """A 2-rank save failure blamed rank 1, which only noticed rank 0 go (it ended first)."""
    with pytest.raises(UserError) as e:
        distributed.spawn(_rank_0_fails_slowly, str(tmp_path), 2, start_method="fork")
    assert str(e.value) == "rank 0 of 2 exited with code 1; the other ranks were stopped"


def test_the_first_rank_that_failed_on_its_own_is_named():
    from onmt.errors import PEER_EXIT
    from onmt.utils.rank_failure import failed_rank

    class Proc:
        def __init__(self, code):
            self.exitcode = code
    assert failed_rank([Proc(-15), Proc(PEER_EXIT), Proc(1)], 1, PEER_EXIT) == (2, 1)
    assert failed_rank([Proc(PEER_EXIT), Proc(-9)], 0, PEER_EXIT) == (0, PEER_EXIT)   # none on its own

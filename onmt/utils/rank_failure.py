"""Which rank of a failed distributed run to name (utils/distributed.py spawn): a rank taken down
by its peer's failure exits PEER_EXIT (onmt/errors.py), so the launcher can wait for the rank that
failed and name it, rather than the one that noticed first."""
import time
from multiprocessing.connection import wait

from onmt.errors import PEER_EXIT

PEER_GRACE_S = 10.0   # how long the others may take to end after a rank ended with PEER_EXIT


def let_the_failed_rank_end(procs):
    """A rank that ended with PEER_EXIT was taken down by another's failure, which may still be on
    its way out: wait up to PEER_GRACE_S for the others before torch's join ends them."""
    if not any(p.exitcode == PEER_EXIT for p in procs):
        return
    deadline = time.monotonic() + PEER_GRACE_S
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        wait([p.sentinel for p in procs if p.is_alive()], timeout=0.1)


def failed_rank(procs, index, code):
    """(rank, exit code) to name: the first that failed on its own, else what join reported."""
    for i, p in enumerate(procs):
        if p.exitcode not in (None, 0, PEER_EXIT) and p.exitcode > 0:
            return i, p.exitcode
    return index, code

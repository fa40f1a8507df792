import sys

import pytest

from onmt.utils.memory import reuse_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc tuning is Linux-only")
def test_reuse_freed_memory_is_accepted_by_glibc():
    import platform
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    assert reuse_freed_memory() is True

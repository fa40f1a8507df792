"""onmt.utils.cli.run_main: each kind of failure is one line on stderr and its exit status."""
import subprocess
import sys
import textwrap

import pytest

CASES = {
    "UserError('bad line 3')": (1, "prog.py: error: bad line 3"),
    "PeerStopped('rank 0 of 2: another process of this run stopped')":
        (1, "prog.py: error: rank 0 of 2: another process of this run stopped"),
    "Stopped('stopped by SIGUSR1 after saving', 138)": (138, "prog.py: stopped by SIGUSR1 after saving"),
    "Terminated()": (143, "prog.py: terminated (SIGTERM)"),
    "FileNotFoundError(2, 'No such file', 'x.txt')": (1, "prog.py: error: no such file: x.txt"),
}


@pytest.mark.parametrize("raised", sorted(CASES))
def test_a_failure_is_one_line_and_its_exit_status(raised, tmp_path):
    # The PeerStopped case leaves a thread that never ends (as gloo's, waiting on a dead peer): the
    # process must still end at once, with its one line, not hang in the interpreter's shutdown.
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import threading
        from onmt.errors import PeerStopped, Stopped, Terminated, UserError
        from onmt.utils.cli import run_main

        def main(argv):
            threading.Thread(target=threading.Event().wait, daemon=False).start()
            raise {raised}

        run_main(main)
    """))
    code, line = CASES[raised]
    if "PeerStopped" not in raised:
        script.write_text(script.read_text().replace("daemon=False", "daemon=True"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.strip().splitlines() == [line]

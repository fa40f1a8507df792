"""onmt.utils.cli.run_main: each kind of failure is one line on stderr and its exit status."""
import os
import subprocess
import sys
import textwrap

import pytest

from helpers.paths import ROOT

CASES = {
    "UserError('bad line 3')": (1, "prog.py: error: bad line 3"),
    "PeerStopped('rank 0 of 2: another process of this run stopped')":
        (3, "prog.py: error: rank 0 of 2: another process of this run stopped"),
    "Stopped('stopped by SIGUSR1 after saving', 138)": (138, "prog.py: stopped by SIGUSR1 after saving"),
    "Terminated()": (143, "prog.py: terminated (SIGTERM)"),
    "Terminated(1)": (129, "prog.py: terminated (SIGHUP)"),
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


@pytest.mark.parametrize("signame, code, line", [("SIGTERM", 143, "prog.py: terminated (SIGTERM)"),
                                                 ("SIGHUP", 129, "prog.py: terminated (SIGHUP)"),
                                                 ("SIGINT", 130, "prog.py: interrupted")])
def test_a_signal_during_the_imports_ends_the_command_even_where_an_import_swallows_it(
        tmp_path, signame, code, line):
    """torch's C extension imports numpy and takes any exception there for a missing numpy: a signal
    raised as an exception inside it was lost and the command went on (and, inside C++, could abort).
    Here a module swallows every exception around the moment its process gets the signal."""
    (tmp_path / "swallows.py").write_text(textwrap.dedent(f"""
        import os
        import signal
        import time
        try:
            os.kill(os.getpid(), signal.{signame})
            time.sleep(5)               # the handler runs here
        except BaseException:
            pass                        # as torch's C extension does around `import numpy`

        def main(argv=None):
            print("main ran")
    """))
    script = tmp_path / "prog.py"
    script.write_text("import sys\nfrom onmt.utils.cli import launch\nlaunch('swallows')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert (proc.returncode, proc.stderr.strip().splitlines(), proc.stdout) == (code, [line], "")


@pytest.mark.parametrize("signame, code, line", [("SIGTERM", 143, "prog.py: terminated (SIGTERM)"),
                                                 ("SIGHUP", 129, "prog.py: terminated (SIGHUP)")])
def test_sighup_unwinds_a_command_as_sigterm_does(tmp_path, signame, code, line):
    """SIGHUP (a closed terminal) ended every command at once, by its default action: no line, and a file being
    written aside left as its temporary file. Now it unwinds as SIGTERM: the `finally` runs, one line."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, time
        from onmt.utils.cli import run_main

        def main(argv):
            try:
                os.kill(os.getpid(), signal.{signame})
                time.sleep(5)
            finally:
                print("cleaned up")

        run_main(main)
    """))
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert (proc.returncode, proc.stderr.strip().splitlines(), proc.stdout) == (code, [line], "cleaned up\n")


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGTERM", "SIGINT"])
def test_a_stop_signal_after_the_command_finished_does_not_kill_it(tmp_path, signame):
    """A SIGHUP in the interpreter's exit, after translate.py had written every line, killed it by the
    default action (exit -1, no word; tests/e2e/test_chaos.py saw it): once the command is done, it exits 0."""
    (tmp_path / "finished.py").write_text("def main(argv):\n    print('done')\n")
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import atexit, os, signal, sys, time
        sys.path.insert(0, {str(tmp_path)!r})
        from onmt.utils.cli import launch
        atexit.register(lambda: (os.kill(os.getpid(), signal.{signame}), time.sleep(0.2)))
        launch("finished")
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "done\n" and "Traceback" not in proc.stderr, proc.stderr

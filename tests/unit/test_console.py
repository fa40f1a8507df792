"""The console scripts (onmt/bin/console.py): each of pyproject.toml's [project.scripts] launches its command as
the .py scripts do, so that ^C during the imports is one line and exit 130. Pointed at `onmt.bin.translate:cli`,
the script imported torch before any handler was in place: ^C in its first seconds was a traceback."""
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers.paths import ROOT
from onmt.bin import console


def _scripts():
    """pyproject.toml's [project.scripts] (read by hand: tomllib is Python 3.11's)."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    rows = [line.split("=", 1) for line in section.splitlines() if "=" in line and not line.startswith("#")]
    return {k.strip(): v.strip().strip('"') for k, v in rows}


def _wrapper(tmp_path, name):
    """The script pip writes for the entry point `name`."""
    module, function = _scripts()[name].split(":")
    path = tmp_path / name
    path.write_text(f"import sys\nfrom {module} import {function}\n"
                    f"if __name__ == '__main__':\n    sys.exit({function}())\n")
    return path


def test_every_console_script_launches_its_command():
    scripts = _scripts()
    assert set(scripts) == set(console.COMMANDS)
    for name, target in scripts.items():
        module, function = target.split(":")
        assert module == "onmt.bin.console", name
        launched = []
        original = console.launch
        console.launch = launched.append
        try:
            getattr(console, function)()
        finally:
            console.launch = original
        assert launched == [console.COMMANDS[name]], name


def test_the_console_module_imports_nothing_heavy():
    code = "import sys, onmt.bin.console; print(sorted(m for m in ('torch', 'numpy', 'yaml') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": ROOT}, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", ["onmt_translate", "onmt_evaluate", "onmt_tune_decoding"])
def test_ctrl_c_while_a_console_script_imports_torch_is_one_line(tmp_path, name):
    """^C once torch's library is being loaded (seen in the process's memory map): one line, exit 130."""
    script = _wrapper(tmp_path, name)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1"})
    module = "numpy" if name == "onmt_evaluate" else "torch"
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with open(f"/proc/{proc.pid}/maps") as f:
                if f"/{module}/" in f.read():
                    break
        except OSError:
            break
        time.sleep(0.005)
    if proc.poll() is not None:
        pytest.skip(f"{name} was done importing before it could be interrupted")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err.strip().splitlines(), out) == (130, [f"{name}: interrupted"], "")

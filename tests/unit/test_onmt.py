"""The package itself (onmt/__init__.py): `import onmt` is cheap, `onmt.Summarizer` is the API's class,
loaded on first use, and any other name is an AttributeError."""
import subprocess
import sys

import pytest

from helpers.paths import ROOT


def test_import_onmt_loads_nothing_else():
    code = ("import sys, onmt; print(sorted(m for m in sys.modules if m.startswith('onmt') or m == 'torch'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['onmt']"


def test_summarizer_on_first_use_and_no_other_name():
    import onmt
    from onmt.api import Summarizer
    assert onmt.Summarizer is Summarizer
    with pytest.raises(AttributeError, match="module 'onmt' has no attribute 'Translator'"):
        onmt.Translator


def test_version_is_the_packages():
    import re

    import onmt
    with open(f"{ROOT}/pyproject.toml", encoding="utf-8") as f:
        declared = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert onmt.__version__ == declared

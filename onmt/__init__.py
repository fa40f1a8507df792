"""onmt-reinforced: Paulus et al.'s deep reinforced summarization model and its baselines.

`from onmt import Summarizer` (onmt/api.py) is imported on first use, so `import onmt` stays cheap.
`onmt.__version__` is the package's version (pyproject.toml's, which tests/unit/test_onmt.py holds
equal).
"""

__version__ = "0.1.0"


def __getattr__(name):
    if name == "Summarizer":
        # `import onmt` imports nothing (start-up time): the API on first use
        from onmt.api import Summarizer
        return Summarizer
    raise AttributeError(f"module 'onmt' has no attribute {name!r}")

"""onmt-reinforced: Paulus et al.'s deep reinforced summarization model and its baselines.

`from onmt import Summarizer` (onmt/api.py) is imported on first use, so `import onmt` stays cheap.
"""


def __getattr__(name):
    if name == "Summarizer":
        from onmt.api import Summarizer
        return Summarizer
    raise AttributeError(f"module 'onmt' has no attribute {name!r}")

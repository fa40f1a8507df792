"""onmt/opts/validate_tools.py: the checks of onmt_evaluate, onmt_explore and tools/plot_attention.py."""
import pytest

from onmt.errors import OptionError


def test_the_evaluation_tools_checks():
    from onmt.opts.validate_tools import MIN_BOOTSTRAP, validate_explore_opts, validate_plot_attention_opts

    class Explore:
        names, system, bootstrap = ["a", ""], ["x", "y"], 1000
    with pytest.raises(OptionError, match="an empty name"):
        validate_explore_opts(Explore)
    Explore.names, Explore.bootstrap = ["a", "b"], MIN_BOOTSTRAP - 1
    with pytest.raises(OptionError, match="resamples"):
        validate_explore_opts(Explore)

    class P:
        attn_plot_n = -1
    with pytest.raises(OptionError, match="-attn_plot_n"):
        validate_plot_attention_opts(P)


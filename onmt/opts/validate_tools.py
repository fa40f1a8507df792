"""The checks of the commands that read predictions and references: onmt_evaluate, onmt_explore,
tools/plot_attention.py (re-exported by onmt/opts/validate.py)."""
from onmt.errors import OptionError

# fewer resamples cannot place the 2.5% and 97.5% percentiles (nor a p-value of 0.01)
MIN_BOOTSTRAP = 100


def validate_evaluate_opts(opt):
    if len(opt.pred) > 2:
        raise OptionError(f"-pred takes one file, or two to compare, got {len(opt.pred)}")
    for name in ("bootstrap", "limit_bytes", "limit_words"):
        if getattr(opt, name) < 0:
            raise OptionError(f"-{name} must be >= 0, got {getattr(opt, name)}")
    if 0 < opt.bootstrap < MIN_BOOTSTRAP:
        raise OptionError(f"-bootstrap {opt.bootstrap}: a 95% interval or a p-value needs at least "
                          f"{MIN_BOOTSTRAP} resamples (1,000 is usual; 0: none)")
    if opt.limit_bytes and opt.limit_words:
        raise OptionError("give -limit_bytes or -limit_words, not both")


def validate_explore_opts(opt):
    if opt.names and len(opt.names) != len(opt.system):
        raise OptionError(f"-names gives {len(opt.names)} names for "
                          f"{len(opt.system)} -system files")
    if any(not name.strip() for name in opt.names):
        raise OptionError(f"-names: an empty name ({opt.names}); give each system a name to show")
    if len(set(opt.names)) != len(opt.names):
        raise OptionError(f"-names: each system needs its own name, got {' '.join(opt.names)}")
    if opt.bootstrap < MIN_BOOTSTRAP:
        raise OptionError(f"-bootstrap {opt.bootstrap}: a 95% interval needs at least "
                          f"{MIN_BOOTSTRAP} resamples")


def validate_plot_attention_opts(opt):
    if opt.attn_plot_n < 0:
        raise OptionError(f"-attn_plot_n must be >= 0, got {opt.attn_plot_n}")

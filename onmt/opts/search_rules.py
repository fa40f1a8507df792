"""translate.py's search options beyond the beam: what test-time sampling implies (the update step)
and the checks of sampling, the length penalty's parameter and -n_best (validation).

Sampling keeps upstream OpenNMT-py's names and meanings: -random_sampling_topk K draws each token
from the K most likely (-1 or 0: the whole distribution; 1: the argmax, i.e. no sampling, the
default here), -random_sampling_topp p from the nucleus, -random_sampling_temp T at temperature T
(0: the argmax). Upstream 3.x's default top-k is 0, so that -random_sampling_topp or
-random_sampling_temp alone samples: here too, -random_sampling_topk not given becomes 0 when one of
them is. A search that samples draws -n_best samples per line from -beam_size 1 (implied when
-beam_size is not given; a beam search does not sample)."""
import math

from onmt.errors import OptionError
from onmt.opts.parse import given

SAMPLING = ("random_sampling_topk", "random_sampling_topp", "random_sampling_temp")


def samples(opt):
    """True when `opt`'s search samples (not the argmax: top-k 1 or temperature 0)."""
    return opt.random_sampling_topk != 1 and opt.random_sampling_temp != 0


def update_sampling(opt):
    """Upstream's top-k default 0 when -random_sampling_topp / _temp is given alone; -beam_size 1
    when the search samples and -beam_size is not given."""
    if not given(opt, "random_sampling_topk") and any(given(opt, n) for n in SAMPLING[1:]):
        opt.random_sampling_topk = 0
    if samples(opt) and not given(opt, "beam_size"):
        opt.beam_size = 1


def check_search(opt):
    """One OptionError for an impossible sampling setting, a sampled beam search, an -n_best the
    search cannot give, or an -alpha no length penalty reads."""
    topk, topp, temp = (getattr(opt, n) for n in SAMPLING)
    if topk < -1:
        raise OptionError(f"-random_sampling_topk must be >= -1 (-1 or 0: the whole distribution, "
                          f"1: the argmax), got {topk}")
    if not (math.isfinite(topp) and 0 <= topp <= 1):
        raise OptionError(f"-random_sampling_topp must be in [0, 1] (0: off), got {topp}")
    if not (math.isfinite(temp) and temp >= 0):
        raise OptionError(f"-random_sampling_temp must be >= 0 (0: the argmax), got {temp}")
    if samples(opt):
        if opt.beam_size != 1:
            raise OptionError(f"-random_sampling_* samples each token: give -beam_size 1, not "
                              f"{opt.beam_size} (-n_best N draws N samples per line; a beam "
                              "search does not sample)")
        if opt.n_best < 1:
            raise OptionError(f"-n_best must be >= 1, got {opt.n_best}")
    elif not 1 <= opt.n_best <= opt.beam_size:
        raise OptionError(f"-n_best must be between 1 and -beam_size ({opt.beam_size}), "
                          f"got {opt.n_best}")
    if given(opt, "alpha") and opt.length_penalty not in ("wu", "power"):
        raise OptionError(f"-alpha is the exponent of the wu and power length penalties: give "
                          f"-length_penalty wu or power (here: {opt.length_penalty})")

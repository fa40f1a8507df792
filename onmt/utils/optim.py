"""Optimizers and learning-rate schedules from options."""
import functools
import math

import torch


def build_optimizer(params, optim="sgd", learning_rate=1.0, adagrad_accumulator_init=0.0,
                    adam_beta1=0.9, adam_beta2=0.999):
    """The optimizer, with PyTorch's fused kernels where the parameters' device and dtype have them:
    one vectorized pass over each tensor instead of a dozen elementwise passes (Adam over
    See et al.'s 7.9M parameters: 7.5 against 21 ms per step on one CPU thread). Same update rule,
    same state."""
    params = [p for p in params if p.requires_grad]
    if optim == "sgd":
        return _fused_if_supported(torch.optim.SGD, params, lr=learning_rate)
    if optim == "adagrad":
        return _fused_if_supported(torch.optim.Adagrad, params, lr=learning_rate,
                                   initial_accumulator_value=adagrad_accumulator_init)
    if optim == "adam":
        return _fused_if_supported(torch.optim.Adam, params, lr=learning_rate,
                                   betas=(adam_beta1, adam_beta2))
    raise ValueError(f"unknown optimizer {optim}")


def _fused_if_supported(cls, params, **kwargs):
    # PyTorch refuses fused=True for a device or dtype without the kernel; the foreach version then
    if params and all(p.is_floating_point() for p in params):
        try:
            return cls(params, fused=True, **kwargs)
        except RuntimeError:
            pass
    return cls(params, **kwargs)


def optimizer_from_opt(opt, params):
    return build_optimizer(params, opt.optim, opt.learning_rate, opt.adagrad_accumulator_init,
                           opt.adam_beta1, opt.adam_beta2)


def load_optimizer_state(optimizer, state, opt, ckpt_names=None, names=None):
    """Load a checkpoint's optimizer `state` into `optimizer` (built by optimizer_from_opt for the
    same optimizer type), then apply this run's hyperparameters (a new -learning_rate wins).

    ckpt_names / names: the parameter names (model.named_parameters order) of the checkpoint's model
    and of this one; parameters this model adds (e.g. coverage) start with a fresh state.
    """
    if ckpt_names is not None and names is not None and list(ckpt_names) != list(names):
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in ckpt_names if n not in index]
        if missing:
            raise ValueError(f"optimizer state for parameters this model lacks: "
                             f"{', '.join(missing[:4])}")
        new_id = [index[n] for n in ckpt_names]
        groups = [dict(g) for g in state["param_groups"]]
        if len(groups) != 1:
            raise ValueError("expected one parameter group")
        groups[0]["params"] = list(range(len(names)))
        state = {"state": {new_id[int(k)]: v for k, v in state["state"].items()},
                 "param_groups": groups}
    # a checkpoint's groups also carry how its optimizer ran (fused, foreach), which load_state_dict
    # would restore: this run's choice stands (the state is the same either way)
    impl = [{k: g[k] for k in ("fused", "foreach") if k in g} for g in optimizer.param_groups]
    # the state an optimizer makes at construction (Adagrad's accumulators; PyTorch before 2.13 does
    # not make it again in step): a parameter the checkpoint has no state for keeps it
    fresh = {p: dict(st) for p, st in optimizer.state.items()}
    optimizer.load_state_dict(state)
    for p, st in fresh.items():
        if not optimizer.state.get(p):
            optimizer.state[p] = st
    for group, kept in zip(optimizer.param_groups, impl):
        group.update(kept)
    for group in optimizer.param_groups:
        group["lr"] = opt.learning_rate
        if "betas" in group:
            group["betas"] = (opt.adam_beta1, opt.adam_beta2)


# -------------------------------------------------------------------------- learning-rate schedules
# OpenNMT-py's, with its formulas. The rate of optimizer step s (1, 2, ...; the step being taken) is
# -learning_rate * scale(s):
#   -decay_method noam:  scale(s) = rnn_size^-0.5 * min(s^-0.5, s * warmup_steps^-1.5)
#   -decay_method rsqrt: scale(s) = 1 / sqrt(max(s, warmup_steps))
#   -decay_method none with exponential decay: upstream's exponential_decay,
#       scale(s) = learning_rate_decay ^ (max(s - start_decay_steps + decay_steps, 0)
#                                         // decay_steps),
#     i.e. 1 before step start_decay_steps, then one more factor of learning_rate_decay at
#     start_decay_steps, start_decay_steps + decay_steps, ...
# Where this project differs on purpose: upstream decays exponentially by default (its
# -start_decay_steps defaults to 50000); here -decay_method none keeps the rate constant (as it
# always did) unless one of -learning_rate_decay, -start_decay_steps, -decay_steps is given, and
# then the others take upstream's defaults (0.5, 50000, 10000).
EXP_DECAY_DEFAULTS = {"learning_rate_decay": 0.5, "start_decay_steps": 50000, "decay_steps": 10000}


def noam_scale(step, warmup_steps, model_size):
    return model_size ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


def rsqrt_scale(step, warmup_steps):
    return 1.0 / math.sqrt(max(step, warmup_steps))


def exponential_scale(step, rate, decay_steps, start_step):
    return rate ** (max(step - start_step + decay_steps, 0) // decay_steps)


def exponential_decay_on(opt):
    """-decay_method none decays only when one of its three options has a value (module comment)."""
    return any(getattr(opt, name) is not None for name in EXP_DECAY_DEFAULTS)


def learning_rate_schedule(opt):
    """step -> learning-rate multiplier for these options, or None for a constant rate
    (the default)."""
    method, warmup = opt.decay_method, opt.warmup_steps
    if method == "noam":
        return functools.partial(noam_scale, warmup_steps=warmup, model_size=opt.rnn_size)
    if method == "rsqrt":
        return functools.partial(rsqrt_scale, warmup_steps=warmup)
    if not exponential_decay_on(opt):
        return None
    value = {n: getattr(opt, n) if getattr(opt, n) is not None else d
             for n, d in EXP_DECAY_DEFAULTS.items()}
    return functools.partial(exponential_scale, rate=value["learning_rate_decay"],
                             decay_steps=value["decay_steps"],
                             start_step=value["start_decay_steps"])

"""Optimizers from options."""
import torch


def build_optimizer(params, optim="sgd", learning_rate=1.0, adagrad_accumulator_init=0.0,
                    adam_beta1=0.9, adam_beta2=0.999):
    params = [p for p in params if p.requires_grad]
    if optim == "sgd":
        return torch.optim.SGD(params, lr=learning_rate)
    if optim == "adagrad":
        return torch.optim.Adagrad(params, lr=learning_rate, initial_accumulator_value=adagrad_accumulator_init)
    if optim == "adam":
        return torch.optim.Adam(params, lr=learning_rate, betas=(adam_beta1, adam_beta2))
    raise ValueError(f"unknown optimizer {optim}")


def optimizer_from_opt(opt, params):
    return build_optimizer(params, opt.optim, opt.learning_rate, opt.adagrad_accumulator_init,
                           opt.adam_beta1, opt.adam_beta2)


def load_optimizer_state(optimizer, state, opt, ckpt_names=None, names=None):
    """Load a checkpoint's optimizer `state` into `optimizer` (built by optimizer_from_opt for the same
    optimizer type), then apply this run's hyperparameters (a new -learning_rate wins).

    ckpt_names / names: the parameter names (model.named_parameters order) of the checkpoint's model and
    of this one; parameters this model adds (e.g. coverage) start with a fresh state.
    """
    if ckpt_names is not None and names is not None and list(ckpt_names) != list(names):
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in ckpt_names if n not in index]
        if missing:
            raise ValueError(f"optimizer state for parameters this model lacks: {', '.join(missing[:4])}")
        new_id = [index[n] for n in ckpt_names]
        groups = [dict(g) for g in state["param_groups"]]
        if len(groups) != 1:
            raise ValueError("expected one parameter group")
        groups[0]["params"] = list(range(len(names)))
        state = {"state": {new_id[int(k)]: v for k, v in state["state"].items()}, "param_groups": groups}
    optimizer.load_state_dict(state)
    for group in optimizer.param_groups:
        group["lr"] = opt.learning_rate
        if "betas" in group:
            group["betas"] = (opt.adam_beta1, opt.adam_beta2)

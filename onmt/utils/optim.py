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

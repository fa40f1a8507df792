"""The training objectives: the maximum-likelihood loss (ml.py), the self-critical policy-gradient
loss and its mix with ML (rl.py), the rewards (rewards.py); `build_loss(opt)` chooses the run's
objective."""
from onmt.losses.ml import MLLoss
from onmt.losses.rl import MixedLoss


def build_loss(opt):
    """The objective of a training run's resolved options (onmt/opts/update.py `resolve_train_run`,
    which resolves -valid_rouge and -max_gen_length): the ML loss, mixed with the self-critical RL
    loss with -rl_gamma or -valid_rouge (every family alike: the losses read the model interface
    alone)."""
    ml = MLLoss.from_opt(opt)
    if opt.rl_gamma is None and not opt.valid_rouge:
        return ml
    return MixedLoss.from_opt(opt, ml)

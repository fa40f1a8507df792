"""A moving average of the weights (upstream OpenNMT-py's -average_decay and -average_every).

Upstream's rule: at the first update the average is a copy of the parameters (float32); after it,
every -average_every steps,

    d = max(average_decay, 1 - (step + 1) / (step + 10))
    average = (1 - d) * average + d * parameters

so early on (d near 0.9) the average follows the weights, later it moves by `average_decay` per
update. Here the updates are at steps 1, 1 + every, 1 + 2 every, ... (upstream counts the batches of
the run, which restart at a resume; the step does not: a resumed run updates at the same steps).
The trainer (onmt/trainer.py) validates, picks `_best.pt` and saves with the average: a checkpoint's
"model" holds the averaged weights (what translate.py, the API, onmt_average_models and
onmt_release_model read) and "train_model" the weights the optimizer trains, from which -train_from
goes on, the average taken back from "model" when the run goes on (the same -save_model): N + N
steps equal 2N bit for bit; a new phase (another -save_model) starts its own average, as it starts
its own best. To train on from the average itself, make it a checkpoint first
(onmt_average_models -models X.pt -output avg.pt). -average_decay 0 (the default) keeps no average
and writes no "train_model".
"""
import contextlib

import torch

from onmt.utils.logging import logger


def parameter_names(model):
    """{every parameter name of the state dict: the name its average is kept under} (a tied weight,
    e.g. shared embeddings, is one parameter of several names: the first one's)."""
    first, out = {}, {}
    for name, p in model.named_parameters(remove_duplicate=False):
        out[name] = first.setdefault(id(p), name)
    return out


class MovingAverage:
    def __init__(self, decay, every=1):
        self.decay, self.every = float(decay), int(every)
        self.average = None   # {parameter name: float32 tensor on the parameter's device}

    @classmethod
    def from_opt(cls, opt):
        """The average of train.py's -average_decay / -average_every, or None (decay 0: none)."""
        return cls(opt.average_decay, opt.average_every) if opt.average_decay > 0 else None

    def update(self, model, step):
        """After the optimizer step `step` (1-based): fold the parameters in, when it is due."""
        if (step - 1) % self.every:
            return
        params = dict(model.named_parameters())
        with torch.no_grad():
            if self.average is None:
                self.average = {n: p.detach().float().clone() for n, p in params.items()}
                return
            d = max(self.decay, 1 - (step + 1) / (step + 10))
            for n, p in params.items():
                self.average[n].mul_(1 - d).add_(p.detach().float(), alpha=d)

    def state_dict(self, model):
        """`model`'s state dict with the averaged parameters (in the parameters' dtype; tied names
        share one tensor), or the state dict itself before the first update."""
        state = model.state_dict()
        if self.average is None:
            return state
        names = parameter_names(model)
        cast = {}
        for key in state:
            if key in names:
                n = names[key]
                if n not in cast:
                    cast[n] = self.average[n].to(state[key].dtype)
                state[key] = cast[n]
        return state

    def checkpoint_weights(self, model):
        """What a checkpoint holds of `model` once there is an average: {"model": the average,
        "train_model": the trained weights}; before the first update, nothing more."""
        if self.average is None:
            return {}
        return {"model": self.state_dict(model), "train_model": model.state_dict()}

    def restore(self, ckpt, model, path=None, log=True):
        """Take the average back from a checkpoint `ckpt` (read from `path`) that holds one (its
        "model" beside a "train_model"); returns whether it did (otherwise it starts at the next
        update, which `log` says)."""
        if "train_model" not in ckpt:
            self.average = None
            if log:
                logger.info(f"-average_decay: no moving average goes on from "
                            f"{path or 'the checkpoint'} (none in it, or a new -save_model): it "
                            "starts from the weights at the next update")
            return False
        params = dict(model.named_parameters())
        self.average = {n: ckpt["model"][n].detach().to(p.device, torch.float32).clone()
                        for n, p in params.items()}
        return True

    @contextlib.contextmanager
    def applied(self, model):
        """Within the block, `model`'s parameters are the average (as validation sees them); after
        it, the trained weights again, bit for bit."""
        if self.average is None:
            yield
            return
        params = dict(model.named_parameters())
        kept = {n: p.detach().clone() for n, p in params.items()}
        try:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(self.average[n])
            yield
        finally:
            with torch.no_grad():
                for n, p in params.items():
                    p.copy_(kept[n])


def applied(average, model):
    """`average.applied(model)`, or nothing to do when `average` is None."""
    return average.applied(model) if average is not None else contextlib.nullcontext()

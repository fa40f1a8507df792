"""Average the weights of checkpoints (upstream OpenNMT-py's onmt_average_models):

    onmt_average_models -models run_step_9000.pt run_step_9500.pt run_step_10000.pt -output avg.pt

The checkpoints must be of one model family, with the same parameters (names, shapes) and the same
vocabulary: anything else is one line naming the first checkpoint that differs. Each floating weight
of the output is the mean of the checkpoints' (summed in float64, then cast back: one checkpoint
gives itself bit for bit); an integer one (a counter buffer) must be equal in all. The output is a
checkpoint of the first one's options, vocabulary and preprocessing record (upstream keeps the
first's too), the largest step, and `averaged_from` (each input's path and step); it holds no
optimizer, RNG or data-position state: translate.py, the API, onmt_tune_decoding and
onmt_release_model read it, train.py -train_from it with -reset_optim all. A checkpoint trained with
-average_decay contributes its moving average (its "model"; the weights the optimizer trained are
left out).
"""
import torch

from onmt.errors import UserError
from onmt.opts import parse_with_given
from onmt.opts.families import family_name
from onmt.opts.release import average_models_parser
from onmt.utils.checkpoint import atomic_torch_save, load_checkpoint
from onmt.utils.cli import run_main
from onmt.utils.files import check_not_inputs, check_output, same_file
from onmt.utils.logging import init_logger, logger
from onmt.utils.release_format import KEPT_KEYS


def check_compatible(first, other, first_path, path):
    """UserError, one line naming `path`, unless checkpoint `other` has the family, vocabulary and
    parameters (names, shapes, dtypes) of `first` (read from `first_path`)."""
    fam_a, fam_b = family_name(first["opt"]), family_name(other["opt"])
    if fam_a != fam_b:
        raise UserError(f"-models: {path} is a {fam_b} model, {first_path} a {fam_a} one: "
                        "only checkpoints of one model family can be averaged")
    if other["vocab"] != first["vocab"]:
        raise UserError(f"-models: the vocabulary of {path} differs from that of {first_path}: "
                        "only checkpoints trained on the same preprocessed data can be averaged")
    a, b = first["model"], other["model"]
    if set(a) != set(b):
        extra = sorted(set(a) ^ set(b))[0]
        raise UserError(f"-models: {path} and {first_path} have different parameters "
                        f"({extra} is in one only): not the same model")
    for name, t in a.items():
        if t.shape != b[name].shape or t.dtype != b[name].dtype:
            raise UserError(f"-models: parameter {name} of {path} is {tuple(b[name].shape)} "
                            f"{b[name].dtype}, {tuple(t.shape)} {t.dtype} in {first_path}: "
                            "not the same model")


def average_state(states, paths):
    """{name: tensor}: each floating tensor the mean of `states`' (float64 sum / count, in the
    tensors' dtype again); other tensors must be equal (a UserError naming the checkpoint
    otherwise)."""
    out = {}
    for name, t in states[0].items():
        if not t.is_floating_point():
            for s, p in zip(states[1:], paths[1:]):
                if not torch.equal(s[name], t):
                    raise UserError(f"-models: {name} of {p} differs from {paths[0]}'s and is "
                                    "not a floating weight: it cannot be averaged")
            out[name] = t.clone()
            continue
        total = torch.zeros(t.shape, dtype=torch.float64, device=t.device)
        for s in states:
            total += s[name].to(torch.float64)
        out[name] = (total / len(states)).to(t.dtype)
    return out


def average_checkpoints(paths):
    """The averaged checkpoint (a dict) of the checkpoint files `paths`."""
    first = load_checkpoint(paths[0])
    states, steps = [first["model"]], [int(first["step"])]
    for path in paths[1:]:
        ckpt = load_checkpoint(path)
        check_compatible(first, ckpt, paths[0], path)
        states.append(ckpt["model"])
        steps.append(int(ckpt["step"]))
        del ckpt
    out = {k: first[k] for k in KEPT_KEYS if k in first}
    out.update(model=average_state(states, paths), step=max(steps),
               averaged_from=[{"path": p, "step": s} for p, s in zip(paths, steps)])
    return out


def main(argv=None):
    opt = parse_with_given(average_models_parser(), argv)
    check_not_inputs({"-output": opt.output, "-log_file": opt.log_file},
                     {"-models": opt.models, "-config": vars(opt).get("config")})
    for i, p in enumerate(opt.models):
        if any(same_file(p, q) for q in opt.models[:i]):
            raise UserError(f"-models: {p} is given twice: each checkpoint would count twice")
    check_output(opt.output, f"-output {opt.output}")
    init_logger(opt.log_file)
    avg = average_checkpoints(list(opt.models))
    atomic_torch_save(avg, opt.output, f"-output {opt.output}")
    logger.info(f"Averaged {len(opt.models)} checkpoints (steps "
                f"{', '.join(str(a['step']) for a in avg['averaged_from'])}) -> {opt.output}")
    return avg


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()

"""The reinforced model's free-running decoding for the self-critical loss
(`ReinforcedModel.rollout`).

The modes ("sample", "greedy") run in lockstep, one decoder state each (the greedy one without
autograd), and share ONE generator product per step: the generation logits of all their rows,
o W_out^T + b_out. A sampled row draws the switch, then a source position or a word
(PointerGenerator.draw: an exact sample of the mixture); a greedy row takes the mixture's argmax.
After the loop, log p(y_t) of the sampled tokens with gradient.

W_out and its product come once per encoding (ReinforcedModel.pass_out_weight, pass_loop_product: a
mixed step that shares its encoding computes them once for both terms). The generator says how a
greedy row's argmax and the sampled tokens' log p are computed (`predict`, `gold_log_prob`, both
given the step's logits kept during the loop) and the model what the steps of a pass are given
(`pass_step_args`): plainly, F.linear, the argmax of `PointerGenerator.forward` and its full
distribution gathered at the drawn ids; in the fused subclasses (onmt/reinforced/fused.py) one
packed product for all modes (2B rows cost little more than B), the argmax without the (N, X)
mixture, the per-pass lookups and products for the sampled steps, and ONE gold-only pass (the drawn
ids as gold, as the ML loss does) on the same logits.
"""
from dataclasses import dataclass, field
from typing import Optional

import torch

from onmt.constants import BOS, EOS
from onmt.execution import gradients_wanted
from onmt.interface import check_rollout_modes, finish_rollout
from onmt.reinforced.decoder import ReinforcedState


@dataclass
class _Run:
    """One rollout mode while it decodes."""
    mode: str                    # "sample" or "greedy"
    grad: bool                   # decoded under autograd (a sample whose log p is trained)
    state: ReinforcedState
    step_args: dict              # model.pass_step_args (under autograd), else none
    inputs: torch.Tensor         # (B,) the next step's input ids
    done: torch.Tensor           # (B,) </s> produced
    o: Optional[torch.Tensor] = None      # (B, 3H) this step's o_t
    attn: Optional[torch.Tensor] = None   # (B, S) this step's encoder attention
    tokens: list = field(default_factory=list)    # (B,) ids per step
    outputs: list = field(default_factory=list)   # sample: o_t per step (with gradient)
    attns: list = field(default_factory=list)     # sample: attention per step
    copied: list = field(default_factory=list)    # sample: (B,) pointer draws per step
    logits: Optional[torch.Tensor] = None  # sample: (L*B, V) generation logits, step-major


def rollout(model, batch, enc, max_length, modes=("sample",)):
    """`model.rollout` (interface.py) for a ReinforcedModel: module docstring."""
    check_rollout_modes(modes, max_length)
    weight = model.pass_out_weight(enc)  # (V, 3H), (V,): the ML term's when it shares `enc`
    product = model.pass_loop_product(enc)  # o -> o W_out^T + b_out without gradient
    B, V = batch.batch_size, model.tgt_vocab_size
    runs = [_start_run(model, batch, enc, mode, gradients_wanted() and mode == "sample")
            for mode in modes]
    for t in range(max_length):
        for run in runs:
            with torch.set_grad_enabled(run.grad):
                run.o, run.attn, run.state = model.decoder.step(run.inputs, run.state,
                                                                **run.step_args)
        logits = product(torch.cat([run.o.detach() for run in runs]))  # (len(modes)*B, V)
        for k, run in enumerate(runs):
            step_logits = logits[k * B:(k + 1) * B]  # (B, V)
            if run.mode == "sample":
                chosen, u = model.generator.draw(step_logits, run.o, run.attn, run.state.src_ex)
                if run.logits is None:
                    run.logits = step_logits.new_empty(max_length * B, V)  # (L*B, V) step-major
                run.logits[t * B:(t + 1) * B] = step_logits
                run.outputs.append(run.o)
                run.attns.append(run.attn)
                run.copied.append(u)
            else:
                state = run.state
                chosen = model.generator.predict(run.o, run.attn, state.src_ex, state.first_pos,
                                                 state.n_oov, weight=weight, logits=step_logits)
            run.tokens.append(chosen)
            run.done = run.done | (chosen == EOS)
            run.inputs = chosen
        if all(bool(run.done.all()) for run in runs):
            break
    return tuple(_finish_run(model, run, weight) for run in runs)


def _start_run(model, batch, enc, mode, grad):
    """The decoder state and bookkeeping of one rollout mode."""
    with torch.set_grad_enabled(grad):
        state = model.decoder.init_state(enc, batch.src_ex, batch.n_oov)
        step_args = model.pass_step_args(state) if grad else {}
    inputs = torch.full((batch.batch_size,), BOS, dtype=torch.long, device=batch.src.device)  # (B,)
    return _Run(mode, grad, state, step_args, inputs, torch.zeros_like(inputs, dtype=torch.bool))


def _finish_run(model, run, weight):
    tokens = torch.stack(run.tokens, dim=1)  # (B, L)
    if run.mode == "greedy":
        return finish_rollout(tokens)
    B, L = tokens.shape
    # (L*B, S) step-major
    src_ex, first_pos = run.state.src_ex.repeat(L, 1), run.state.first_pos.repeat(L, 1)
    drawn = tokens.t().reshape(-1)  # (L*B,) step-major
    o, attn = torch.cat(run.outputs), torch.cat(run.attns)  # (L*B, 3H), (L*B, S)
    with torch.set_grad_enabled(run.grad):
        ll, _ = model.generator.gold_log_prob(o, attn, src_ex, first_pos, drawn, run.state.n_oov,
                                              weight=weight, logits=run.logits[:L * B])  # (L*B,)
    return finish_rollout(tokens, ll.view(L, B).t(), torch.stack(run.copied, dim=1))  # (B, L)

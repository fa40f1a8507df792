"""The reinforced model's free-running decoding for the self-critical loss
(`ReinforcedModel.rollout`).

The modes ("sample", "greedy") run in lockstep, one decoder state each (the greedy one without
autograd), and share ONE generator product per step: the generation logits of all their rows,
o W_out^T + b_out. A sampled row draws the switch, then a source position or a word
(PointerGenerator.draw: an exact sample of the mixture); a greedy row takes the mixture's argmax.
After the loop, log p(y_t) of the sampled tokens with gradient.

W_out and (fused) its packed product come once per encoding (ReinforcedModel.pass_out_weight: a
mixed step that shares its encoding computes them once for both terms). With fused kernels (the
model's Execution, onmt/execution.py) one product serves all modes (2B rows cost little more
than B), the argmax comes without the (N, X) mixture (gold_mixture.pointer_generator_predict), the
sampled steps use the per-pass lookups and products (step_embedding, step_source), and ONE fused
gold-only pass (gold_log_prob with the drawn ids as gold, as the ML loss does) gives log p(y_t) from
the same logits kept during the loop. Plain kernels: F.linear, the argmax of
`PointerGenerator.forward` and its full distribution gathered at the drawn ids.
"""
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F

from onmt.constants import BOS, EOS
from onmt.execution import gradients_wanted
from onmt.fused.gold_mixture import pointer_generator_gold_log_prob, pointer_generator_predict
from onmt.interface import check_rollout_modes, finish_rollout
from onmt.reinforced.decoder import ReinforcedState


@dataclass
class _Run:
    """One rollout mode while it decodes."""
    mode: str                    # "sample" or "greedy"
    grad: bool                   # decoded under autograd (a sample whose log p is trained)
    state: ReinforcedState
    step_args: dict              # the pass's step_embedding / step_source (fused, under autograd)
    inputs: torch.Tensor         # (B,) the next step's input ids
    done: torch.Tensor           # (B,) </s> produced
    o: Optional[torch.Tensor] = None      # (B, 3H) this step's o_t
    attn: Optional[torch.Tensor] = None   # (B, S) this step's encoder attention
    tokens: list = field(default_factory=list)    # (B,) ids per step
    outputs: list = field(default_factory=list)   # sample: o_t per step (with gradient)
    attns: list = field(default_factory=list)     # sample: attention per step
    copied: list = field(default_factory=list)    # sample: (B,) pointer draws per step
    logits: Optional[torch.Tensor] = None  # sample, fused: (L*B, V) generation logits, step-major


def rollout(model, batch, enc, max_length, modes=("sample",)):
    """`model.rollout` (interface.py) for a ReinforcedModel: module docstring."""
    check_rollout_modes(modes, max_length)
    fused = model.execution.fused
    weight = model.pass_out_weight(enc)  # (V, 3H), (V,): the ML term's when it shares `enc`
    product = model.pass_loop_product(enc) if fused else _plain_product(weight)  # -amp: low
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
                if fused:
                    if run.logits is None:
                        run.logits = step_logits.new_empty(max_length * B, V)  # (L*B, V) step-major
                    run.logits[t * B:(t + 1) * B] = step_logits
                run.outputs.append(run.o)
                run.attns.append(run.attn)
                run.copied.append(u)
            else:
                chosen = _greedy(model, run, step_logits, weight)
            run.tokens.append(chosen)
            run.done = run.done | (chosen == EOS)
            run.inputs = chosen
        if all(bool(run.done.all()) for run in runs):
            break
    return tuple(_finish_run(model, run, weight) for run in runs)


def _plain_product(weight):
    """o (N, 3H) -> o W_out^T + b_out (N, V) without gradient: the plain F.linear."""
    w_out, b_out = (w.detach() for w in weight)
    return lambda o: F.linear(o, w_out, b_out)


@torch.no_grad()
def _greedy(model, run, step_logits, weight):
    """The argmax of the mixture (B,) for a greedy run's step."""
    state = run.state
    if model.execution.fused:
        return pointer_generator_predict(model.generator, run.o, run.attn, state.src_ex,
                                         state.first_pos, logits=step_logits)
    # (X, 3H), (X,)
    padded = model.generator.pad_weight(tuple(w.detach() for w in weight), state.n_oov)
    return model.generator(run.o, run.attn, state.src_ex, state.first_pos, state.n_oov,
                           weight=padded).argmax(1)


def _start_run(model, batch, enc, mode, grad):
    """The decoder state and bookkeeping of one rollout mode."""
    with torch.set_grad_enabled(grad):
        state = model.decoder.init_state(enc, batch.src_ex, batch.n_oov)
        step_args = (dict(embed=model.decoder.step_embedding(),
                          source=model.decoder.step_source(state))
                     if grad and model.execution.fused else {})
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
        if model.execution.fused:
            ll, _ = pointer_generator_gold_log_prob(model.generator, o, attn, src_ex, first_pos,
                                                    drawn, weight=weight,
                                                    logits=run.logits[:L * B])  # (L*B,)
        else:
            n_oov = run.state.n_oov
            logp = model.generator(o, attn, src_ex, first_pos, n_oov,
                                   weight=model.generator.pad_weight(weight, n_oov))
            ll = logp.gather(1, drawn.unsqueeze(1)).squeeze(1)  # (L*B,)
    return finish_rollout(tokens, ll.view(L, B).t(), torch.stack(run.copied, dim=1))  # (B, L)

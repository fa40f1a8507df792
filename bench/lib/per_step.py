"""The reinforced model's teacher forcing computed step by step with a per-step generator: the reference
the tests compare the model's fused paths against (tests/unit/test_reinforced_model.py, through
tests/helpers/reinforced.py) and bench/reinforced_step_bench.py's baseline."""
import torch

from onmt.modules.sampling import sample_rows


def per_step_forward(model, batch, hoisted=False):
    """`model(batch)` (teacher forcing with the model's scheduled sampling) the way a self-contained
    per-step generator computes it: the generator at every step on every row, the full (B, X)
    distribution of each step, scheduled-sampling choices read from it. W_out is recomputed at every
    step, or with `hoisted` once per pass. Built from the model's public pieces (decoder.step,
    generator, out_weight, pad_weight); the tests compare the model's fused paths against it, and
    bench/reinforced_step_bench.py times it as its baseline.
    Returns log p (B, T-1, X) and {"std": (B, T-1, S)[, "sampled": (B, T-1)]}."""
    decoder, generator = model.decoder, model.generator
    state = decoder.init_state(model.encode(batch), batch.src_ex, batch.n_oov)
    tgt = batch.tgt  # (B, T)
    n_steps = tgt.size(1) - 1
    sampling = model.training and model.scheduled_sampling > 0
    step_weight = generator.pad_weight(generator.out_weight(), state.n_oov) if hoisted else None  # (X, 3H), (X,)
    logps, attns, fed_back = [], [], []
    step_args = model.pass_step_args(state)  # a fused model's per-pass lookups and products
    inputs = tgt[:, 0]  # (B,)
    for t in range(n_steps):
        o_t, attn, state = decoder.step(inputs, state, **step_args)
        attns.append(attn)
        logps.append(generator(o_t, attn, state.src_ex, state.first_pos, state.n_oov, weight=step_weight))  # (B, X)
        if t + 1 == n_steps:
            break
        inputs = tgt[:, t + 1]
        if sampling:  # each row's next input is, with probability p, the model's own choice
            drawn = torch.rand(inputs.shape, device=inputs.device) < model.scheduled_sampling  # (B,)
            with torch.no_grad():
                logp = logps[-1].detach()
                chosen = sample_rows(logp.exp()) if model.sampling_mode == "sample" else logp.argmax(dim=1)
                inputs = torch.where(drawn, chosen, inputs)
            fed_back.append(drawn)
    extra = {"std": torch.stack(attns, dim=1)}  # (B, T-1, S)
    if fed_back:
        extra["sampled"] = torch.stack([torch.zeros_like(fed_back[0])] + fed_back, dim=1)  # (B, T-1)
    return torch.stack(logps, dim=1), extra  # (B, T-1, X)

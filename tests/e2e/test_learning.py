"""Short CPU learning runs on a copy task: the ML loss clearly falls."""

import torch

from helpers.models import make_batch, make_opt, make_vocabs
from onmt.losses import build_loss
from onmt.model_builder import build_model


def _train(opt, vocabs, src_low, steps=150, B=16, S=6, seed=0, lr=0.03):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add contention
    try:
        return _run(opt, vocabs, src_low, steps, B, S, seed, lr)
    finally:
        torch.set_num_threads(threads)


def _run(opt, vocabs, src_low, steps, B, S, seed, lr):
    torch.manual_seed(seed)
    model = build_model(opt, vocabs)
    loss_fn = build_loss(opt)
    optim = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    xents = []
    for step in range(steps):
        src = torch.randint(src_low, len(vocabs.src), (B, S), generator=g)
        lengths = torch.full((B,), S)
        # target body = the source itself (make_batch gives OOV words their extended ids)
        batch = make_batch(vocabs, B=B, S=S, T=S + 2, src=src, lengths=lengths, copy_source=True, seed=step)
        loss, stats = loss_fn(model, batch)
        optim.zero_grad()
        (loss / stats.n_words).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optim.step()
        xents.append(stats.xent())
    return sum(xents[:10]) / 10, sum(xents[-10:]) / 10


def test_attention_model_learns_copy_task():
    vocabs = make_vocabs(src_vocab_size=14, tgt_vocab_size=14, shared=False)
    opt = make_opt(rnn_size=32, word_vec_size=16, global_attention="general", brnn=True, param_init=0.1)
    first, last = _train(opt, vocabs, src_low=4)
    assert last < 0.25 * first, (first, last)


def test_pointer_copies_words_outside_target_vocabulary():
    # every source word is outside the target vocabulary: only the pointer can produce them
    vocabs = make_vocabs(src_vocab_size=20, tgt_vocab_size=8, shared=True)
    opt = make_opt(rnn_size=32, word_vec_size=16, global_attention="mlp", copy_attn=True,
                   coverage_attn=True, share_embeddings=True, brnn=True)
    first, last = _train(opt, vocabs, src_low=8, steps=100)
    assert last < 0.3 * first, (first, last)

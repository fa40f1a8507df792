"""-beam_sync_every N (issue 56, item 3): the beam search's two host checks (did a hypothesis end,
how many examples are live) every N steps, one transfer for N (onmt/translate/beam_search.py, Host
checks). The outputs are N = 1's exactly (tokens, scores, attention), for every family and setting
(sampling checks every step: a done example's rows would draw too); the checks' count falls from two
per step to one transfer per N steps."""
import collections

import pytest
import torch

from helpers.models import build, make_batch, make_opt, make_vocabs
from helpers.search import search
from helpers.syncs import counting_syncs
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings

FAMILIES = {
    "rnn": dict(brnn=True, global_attention="general"),
    "copy": dict(copy_attn=True, coverage_attn=True, brnn=True, global_attention="mlp"),
    "reinforced": dict(reinforced=True, brnn=True, rnn_size=12, word_vec_size=6),
}
SETTINGS = {
    "beam": dict(beam_size=3, n_best=2, max_length=9),
    "beam, wu + coverage": dict(beam_size=4, n_best=3, max_length=10, length_penalty="wu", alpha=0.9,
                                coverage_penalty="summary", beta=0.5, block_ngram_repeat=2),
    "greedy": dict(beam_size=1, max_length=9, min_length=2),
    "sampling": dict(beam_size=1, n_best=2, max_length=9, random_sampling_topk=5, random_sampling_temp=1.5),
}


def _model(family):
    torch.manual_seed(0)
    vocabs = make_vocabs()
    model = build(make_opt(**FAMILIES[family]), vocabs).eval()
    with torch.no_grad():   # an untrained model rarely ends: make </s> likely, so examples end apart
        for name, p in model.named_parameters():
            if name.endswith("bias") and p.dim() == 1 and p.numel() == len(vocabs.tgt):
                p[3] += 2.0
    return model, make_batch(vocabs, B=4, S=7, T=6, copy_source=True)


def _outputs(model, batch, every, **settings):
    torch.manual_seed(5)   # sampling draws from the global generator
    hyps = beam_search(model, batch, SearchSettings(**settings, beam_sync_every=every), keep_attn=True)
    return [[(h.tokens, h.score, h.log_prob, h.attn) for h in example]
            for example in hyps]


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("every", [2, 4, 50])
def test_the_same_outputs_as_every_step(family, name, every):
    model, batch = _model(family)
    ref = _outputs(model, batch, 1, **SETTINGS[name])
    got = _outputs(model, batch, every, **SETTINGS[name])
    lengths = {len(h[0]) for example in ref for h in example}
    assert len(lengths) > 1 or name == "greedy"   # examples ended at different steps: batches shrank
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert [h[0] for h in g] == [h[0] for h in r]
        for hg, hr in zip(g, r):
            assert hg[1] == hr[1] and hg[2] == hr[2]
            assert torch.equal(hg[3], hr[3])


def _by_file(counts):
    out = collections.Counter()
    for (name, where), n in counts.items():
        out[(name, where.rsplit(":", 1)[0])] += n
    return out


def test_one_transfer_per_n_steps():
    model, batch = _model("rnn")
    per_length = []
    for length in (8, 12):   # no hypothesis can end before max_length: the same work per step
        with torch.no_grad(), counting_syncs() as counts:
            search(model, batch, beam_size=3, min_length=length, max_length=length, beam_sync_every=4)
        per_length.append(_by_file(counts))
    # 4 more steps: one transfer, where every step asked twice (tests/unit/test_syncs.py BEAM_STEP)
    assert dict(per_length[1] - per_length[0]) == {("tolist", "translate/beam_search.py"): 1}

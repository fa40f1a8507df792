"""onmt/translate/ensemble.py: the mixture against its formula written out, an ensemble of a model with itself
is the model (searches and translate.py), two models' ensemble against a naive per-step mixture, the refusals."""
import math

import pytest
import torch

from helpers.checkpoints import save_tiny_checkpoint
from helpers.rescoring import rescore
from helpers.toy_models import ToyModel, toy_batches, toy_vocabs
from onmt.errors import UserError
from onmt.translate.beam_search import beam_search
from onmt.translate.decoding import SearchSettings
from onmt.translate.ensemble import Ensemble, check_same_vocabularies, mean_log_probs

VOCABS = toy_vocabs(n_src_words=8, n_tgt_words=4)
LINES = ["w0 w1 w2", "w3 w1", "w4 w4 w2 w0", "w5 w6 w7"]
SETTINGS = [dict(beam_size=1), dict(beam_size=3, n_best=2, length_penalty="avg"),
            dict(beam_size=4, block_ngram_repeat=2, min_length=1, coverage_penalty="summary", beta=0.3),
            dict(beam_size=1, n_best=3, random_sampling_topk=0, random_sampling_temp=1.3)]


def toy(seed, copy):
    return ToyModel(len(VOCABS.src), len(VOCABS.tgt), copy=copy, seed=seed, sharp=1.5).eval()


def batch():
    return next(toy_batches(LINES, None, VOCABS, len(LINES)))


def searched(model, settings):
    hyps = beam_search(model, batch(), SearchSettings(max_length=6, **settings), keep_attn=True,
                       generator=torch.Generator().manual_seed(3))
    return [[(h.tokens, h.score, h.log_prob, h.attn.tolist()) for h in nbest] for nbest in hyps]


def test_mean_log_probs_is_the_log_of_the_mean_probability():
    torch.manual_seed(0)
    stacked = torch.randn(3, 5, 7).log_softmax(-1).double()
    stacked[:, 0, 0] = -math.inf                 # every member: probability 0
    stacked[1, 1, 1] = -math.inf                 # one member
    want = stacked.exp().mean(0).log()
    got = mean_log_probs(stacked)
    assert torch.isneginf(got[0, 0]) and not torch.isnan(got).any()
    assert torch.allclose(got, want, atol=1e-12)
    big = torch.tensor([[-1e4, -2e4], [-1e4, -3e4]])   # far below exp's float range: still exact
    assert torch.allclose(mean_log_probs(big), torch.tensor([-1e4, -2e4 + math.log(0.5)]))


def test_copies_of_one_model_give_its_log_probabilities_bit_for_bit():
    lp = torch.randn(4, 9).log_softmax(-1)
    lp[0, 3] = -math.inf
    assert torch.equal(mean_log_probs(torch.stack([lp, lp, lp])), lp)


@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("settings", SETTINGS)
def test_an_ensemble_of_a_model_with_itself_is_the_model(copy, settings):
    model = toy(1, copy)
    assert searched(Ensemble([model, model]), settings) == searched(model, settings)


@pytest.mark.parametrize("copy", [(False, False), (True, True), (True, False)])
def test_two_models_mix_their_step_distributions(copy):
    """Each step of the ensemble is log((p_1 + p_2) / 2) of the members' steps; a member that does not copy gives
    the extended slots 0; the search's scores are the mixture's teacher-forced sums."""
    a, b = toy(1, copy[0]), toy(2, copy[1])
    ens, bt = Ensemble([a, b]), batch()
    with torch.no_grad():
        states = [m.init_state(bt, m.encode(bt)) for m in (a, b)]
        state = ens.init_state(bt, ens.encode(bt))
        inputs = torch.full((bt.batch_size,), 2, dtype=torch.long)
        for _ in range(3):
            got, state, attns = ens.decode_step(inputs, state)
            steps = [m.decode_step(inputs, s) for m, s in zip((a, b), states)]
            X = got.size(1)
            probs = [torch.nn.functional.pad(lp.exp(), (0, X - lp.size(1))) for lp, _, _ in steps]
            assert torch.allclose(got.exp(), (probs[0] + probs[1]) / 2, atol=1e-6)
            assert torch.allclose(attns["std"], (steps[0][2]["std"] + steps[1][2]["std"]) / 2)
            states = [s for _, s, _ in steps]
            inputs = got.argmax(1)
    hyps = beam_search(ens, bt, SearchSettings(beam_size=3, max_length=5))
    for i, nbest in enumerate(hyps):
        for h in nbest:
            ll = ens.gold_log_likelihood(_gold_batch(LINES[i], h.tokens))[0].sum().detach()
            assert h.log_prob == pytest.approx(float(ll), abs=1e-4)
    if copy == (False, False):   # one model's rescoring (helpers) and the ensemble's gold path agree
        h = hyps[0][0]
        with torch.no_grad():
            ll = float(Ensemble([a]).gold_log_likelihood(_gold_batch(LINES[0], h.tokens))[0].sum())
        assert ll == pytest.approx(rescore(a, bt, 0, [h.tokens])[0], abs=1e-4)


def _gold_batch(src, tokens):
    """A one-example batch whose target is `tokens` (extended ids of the toy vocabulary) then </s>."""
    words = [VOCABS.tgt.itos[t] if t < len(VOCABS.tgt) else None for t in tokens]
    if None in words:   # a copied OOV: its source word
        src_words = src.split()
        oov = [w for w in dict.fromkeys(src_words) if w not in VOCABS.tgt.stoi]
        words = [w if w is not None else oov[t - len(VOCABS.tgt)] for w, t in zip(words, tokens)]
    return next(toy_batches([src], [" ".join(words)], VOCABS, 1))


def test_different_vocabularies_are_one_line_naming_the_model():
    other = toy_vocabs(n_src_words=8, n_tgt_words=5)
    assert check_same_vocabularies([("a.pt", VOCABS), ("b.pt", VOCABS)]) is None
    msg = check_same_vocabularies([("a.pt", VOCABS), ("b.pt", other)])
    assert msg.startswith("-model b.pt: its target vocabulary differs from a.pt's") and "\n" not in msg


@pytest.mark.parametrize("family", ["rnn", "copy", "reinforced"])
def test_translate_py_with_a_model_twice_writes_the_model_s_predictions(tmp_path, family):
    from onmt.bin.translate import main
    ckpt = save_tiny_checkpoint(tmp_path / "m.pt", family, seed=3)
    (tmp_path / "src.txt").write_text("w1 w2 w3 w4\nw5 w5 w6\n\nw7 w1 w9 w2 w3\n")
    outs = []
    for models in ([ckpt], [ckpt, ckpt]):
        out = tmp_path / f"pred{len(models)}.txt"
        main(["-model", *models, "-src", str(tmp_path / "src.txt"), "-output", str(out), "-beam_size", "3",
              "-n_best", "2", "-max_length", "6", "-with_score", "-tgt", str(tmp_path / "src.txt")])
        outs.append([line.split("\t") for line in out.read_text().splitlines()])
    assert [w for w, _ in outs[0]] == [w for w, _ in outs[1]]
    assert [float(s) for _, s in outs[0]] == pytest.approx([float(s) for _, s in outs[1]], abs=1e-5)


def test_translate_py_refuses_models_of_different_vocabularies(tmp_path, monkeypatch):
    import helpers.checkpoints as hc
    from onmt.bin.translate import main
    a = save_tiny_checkpoint(tmp_path / "a.pt", "rnn")
    monkeypatch.setattr(hc, "VOCABS", toy_vocabs(n_src_words=12, n_tgt_words=6))
    (tmp_path / "src.txt").write_text("w1 w2\n")
    with pytest.raises(UserError, match="-model .*b.pt: its (source|target) vocabulary differs from"):
        b = save_tiny_checkpoint(tmp_path / "b.pt", "rnn")
        main(["-model", a, b, "-src", str(tmp_path / "src.txt"), "-output", str(tmp_path / "p.txt")])

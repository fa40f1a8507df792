"""Upstream OpenNMT-py's training and preprocessing flags, with upstream's meaning (docs/upstream.md,
Upstream OpenNMT-py flags)."""
import math

import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from onmt import opts
from onmt.model_builder import build_model


def _model_opt(*argv):
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", *argv])
    opts.update_model_opts(opt)
    opts.validate_model_opts(opt)
    return opt


# --------------------------------------------------------------------------- 1. -encoder_type, -hidden_size
def test_encoder_type_is_brnn_and_hidden_size_is_rnn_size():
    assert _model_opt("-encoder_type", "brnn").brnn is True
    assert _model_opt("-encoder_type", "rnn").brnn is False and _model_opt().brnn is False
    assert vars(_model_opt("-encoder_type", "brnn")) == vars(_model_opt("-brnn"))
    assert vars(_model_opt("-hidden_size", "64")) == vars(_model_opt("-rnn_size", "64"))
    opt = _model_opt("-hidden_size", "64")
    assert opt.rnn_size == 64 and opts.given(opt, "rnn_size")
    model = build_model(make_opt(brnn=True), make_vocabs())
    assert model.encoder.rnn.bidirectional
    with pytest.raises(SystemExit):
        opts.train_parser().parse_args(["-data", "d", "-encoder_type", "transformer"])


def test_reinforced_checks_see_the_upstream_names():
    opt = _model_opt("-reinforced", "-encoder_type", "brnn", "-hidden_size", "64")
    assert opt.brnn and opt.rnn_size == 64
    with pytest.raises(opts.OptionError, match="-encoder_type rnn"):
        _model_opt("-reinforced", "-encoder_type", "rnn")
    with pytest.raises(opts.OptionError, match="even -rnn_size"):
        _model_opt("-encoder_type", "brnn", "-hidden_size", "7")


# --------------------------------------------------------------------------- 2. learning-rate schedules
from helpers.e2e import random_pair_data, torch_threads  # noqa: E402
from onmt.bin import train as train_bin  # noqa: E402
from onmt.utils.optim import learning_rate_schedule  # noqa: E402


def _schedule(*argv):
    opt = opts.parse_with_given(opts.train_parser(), ["-data", "d", "-rnn_size", "64", *argv])
    opts.update_train_opts(opt)
    opts.validate_train_opts(opt)
    return learning_rate_schedule(opt)


def test_schedules_follow_upstream_formulas():
    steps = range(1, 400)
    assert _schedule() is None   # the default: a constant rate, as before
    f = _schedule("-decay_method", "noam", "-warmup_steps", "50")
    for s in steps:
        assert f(s) == pytest.approx(64 ** -0.5 * min(s ** -0.5, s * 50 ** -1.5), rel=1e-12)
    f = _schedule("-decay_method", "rsqrt", "-warmup_steps", "50")
    for s in steps:
        assert f(s) == pytest.approx(1 / math.sqrt(max(s, 50)), rel=1e-12)
    f = _schedule("-start_decay_steps", "100", "-decay_steps", "30", "-learning_rate_decay", "0.7")
    for s in steps:
        assert f(s) == pytest.approx(1.0 if s < 100 else 0.7 ** ((s - 100) // 30 + 1), rel=1e-12)
    f = _schedule("-learning_rate_decay", "0.5")   # the other two take upstream's defaults 50000, 10000
    assert (f(49999), f(50000), f(59999), f(60000)) == (1.0, 0.5, 0.5, 0.25)
    with pytest.raises(opts.OptionError, match="-decay_method none"):
        _schedule("-decay_method", "noam", "-start_decay_steps", "10")
    with pytest.raises(opts.OptionError, match="noam or rsqrt"):
        _schedule("-warmup_steps", "10")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("upstream")), seed=0, n_examples=40, max_len=7,
                            target=lambda words: words[:3])


def _train(data, save_model, *more_args):
    with torch_threads(1):
        train_bin.main(["-data", data, "-save_model", save_model, "-layers", "1", "-rnn_size", "8",
                        "-word_vec_size", "6", "-optim", "sgd", "-learning_rate", "0.5", "-batch_size", "8",
                        "-report_every", "100", "-valid_steps", "0", "-seed", "7", *more_args])


def _ckpt(path):
    return torch.load(path, weights_only=True)


def test_schedule_sets_the_rate_of_every_step_and_resume_continues_it(data, tmp_path):
    sched = ["-decay_method", "noam", "-warmup_steps", "3"]
    _train(data, str(tmp_path / "a"), *sched, "-train_steps", "6", "-save_checkpoint_steps", "1")
    for s in range(1, 7):
        lr = _ckpt(tmp_path / f"a_step_{s}.pt")["optim"]["param_groups"][0]["lr"]
        assert lr == pytest.approx(0.5 * 8 ** -0.5 * min(s ** -0.5, s * 3 ** -1.5), rel=1e-12)
    _train(data, str(tmp_path / "b"), *sched, "-train_steps", "3", "-save_checkpoint_steps", "3")
    _train(data, str(tmp_path / "b"), "-train_steps", "6", "-save_checkpoint_steps", "3",
           "-train_from", str(tmp_path / "b_step_3.pt"))   # the schedule comes from the checkpoint
    a, b = _ckpt(tmp_path / "a_step_6.pt"), _ckpt(tmp_path / "b_step_6.pt")
    assert a["optim"]["param_groups"][0]["lr"] == b["optim"]["param_groups"][0]["lr"]
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    _train(data, str(tmp_path / "c"), "-train_steps", "2", "-save_checkpoint_steps", "1")
    assert _ckpt(tmp_path / "c_step_2.pt")["optim"]["param_groups"][0]["lr"] == 0.5   # default: constant


# --------------------------------------------------------------------------- 3. tied / fixed embeddings
from onmt.constants import PAD  # noqa: E402
from onmt.losses.ml import MLLoss  # noqa: E402


@pytest.mark.parametrize("copy", [False, True])
def test_share_decoder_embeddings_ties_the_output_matrix(copy):
    vocabs = make_vocabs(shared=False)
    opt = make_opt(share_decoder_embeddings=True, copy_attn=copy, word_vec_size=8)
    model = build_model(opt, vocabs)
    emb = model.decoder.embeddings.weight
    assert model.generator.linear.weight.data_ptr() == emb.data_ptr()
    assert not any("generator.linear.weight" in k for k in model.state_dict())
    batch = make_batch(vocabs, seed=2)
    loss, _ = MLLoss()(model, batch)
    loss.backward()
    h = model.decoder  # the generator's logits are h~ E^T + b: check against the formula at one step
    state = model.init_state(batch, model.encode(batch))
    dec, _ = h.step(model.embed_target(batch.tgt[:, 0]), state)
    logits = model.generator.linear(dec.out)
    assert torch.allclose(logits, dec.out @ emb[:len(vocabs.tgt)].T + model.generator.linear.bias)
    assert emb.grad is not None and emb.grad[len(vocabs.tgt) - 1].abs().sum() > 0  # reached through the output
    with pytest.raises(opts.OptionError, match="-word_vec_size equal to -rnn_size"):
        make_opt(share_decoder_embeddings=True, word_vec_size=6)
    make_opt(reinforced=True, share_decoder_embeddings=True)   # implied by the reinforced model's W_out
    with pytest.raises(opts.OptionError, match="-no_tied_output"):
        make_opt(reinforced=True, share_decoder_embeddings=True, no_tied_output=True)


def test_fixed_word_vectors_do_not_move(data, tmp_path):
    _train(data, str(tmp_path / "f"), "-copy_attn", "-fix_word_vecs_enc", "-train_steps", "1",
           "-save_checkpoint_steps", "1")
    _train(data, str(tmp_path / "f"), "-train_steps", "3", "-save_checkpoint_steps", "3",
           "-train_from", str(tmp_path / "f_step_1.pt"))   # and a resume keeps them fixed
    first, last = _ckpt(tmp_path / "f_step_1.pt")["model"], _ckpt(tmp_path / "f_step_3.pt")["model"]
    key = "encoder.embeddings.lut.weight"
    start = torch.load(tmp_path / "f_step_1.pt", weights_only=True)
    assert torch.equal(first[key], last[key])
    assert not torch.equal(first["decoder.embeddings.lut.weight"], last["decoder.embeddings.lut.weight"])
    torch.manual_seed(0)
    fresh = build_model(make_opt(fix_word_vecs_enc=True, fix_word_vecs_dec=True), make_vocabs(shared=False))
    frozen = {n for n, p in fresh.named_parameters() if not p.requires_grad}
    assert frozen == {"encoder.embeddings.lut.weight", "decoder.embeddings.lut.weight"}
    assert start["opt"]["fix_word_vecs_enc"] is True


def test_checkpoints_older_than_the_added_options_still_resume(data, tmp_path):
    _train(data, str(tmp_path / "o"), "-train_steps", "1", "-save_checkpoint_steps", "1")
    ckpt = _ckpt(tmp_path / "o_step_1.pt")
    for name in opts.ADDED_MODEL_OPTIONS:
        del ckpt["opt"][name]
    torch.save(ckpt, tmp_path / "old.pt")
    _train(data, str(tmp_path / "o2"), "-train_steps", "2", "-train_from", str(tmp_path / "old.pt"))
    assert _ckpt(tmp_path / "o2_step_2.pt")["opt"]["fix_word_vecs_enc"] is False


@pytest.mark.parametrize("family", ["copy", "reinforced"])
def test_checkpoints_older_than_the_added_options_still_translate(tmp_path, family):
    """translate.py gives a checkpoint the defaults of the model options it predates, then validates."""
    from helpers.checkpoints import save_tiny_checkpoint
    from onmt.bin.translate import main as translate
    new = save_tiny_checkpoint(tmp_path / "new.pt", family)
    ckpt = _ckpt(new)
    for name in opts.ADDED_MODEL_OPTIONS:
        del ckpt["opt"][name]
    torch.save(ckpt, tmp_path / "old.pt")
    (tmp_path / "src.txt").write_text("w1 w2 w9\nw3 w11 w4 w5\n")
    out = [translate(["-model", path, "-src", str(tmp_path / "src.txt"), "-output", str(tmp_path / f"{i}.txt"),
                      "-beam_size", "2", "-max_length", "5"]) for i, path in enumerate((new, str(tmp_path / "old.pt")))]
    assert [[t.tokens for t in n] for n in out[0]] == [[t.tokens for t in n] for n in out[1]]


# --------------------------------------------------------------------------- 4. bridge, copy options
def test_bridge_is_a_linear_layer_and_relu_per_state():
    vocabs = make_vocabs()
    model = build_model(make_opt(bridge=True, enc_layers=2, dec_layers=2, brnn=True), vocabs)
    enc = model.encoder
    assert len(enc.bridge) == 2   # h and c
    batch = make_batch(vocabs, seed=3)
    bridged = enc(batch.src, batch.src_lengths).final
    bridge, enc.bridge = enc.bridge, None
    raw = enc(batch.src, batch.src_lengths).final
    enc.bridge = bridge
    for lin, r, b in zip(bridge, raw, bridged):   # r, b: (L, B, H)
        L, B, H = r.shape
        for i in range(B):
            x = torch.cat([r[layer, i] for layer in range(L)])   # [s_1; s_2] of example i
            y = torch.relu(lin.weight @ x + lin.bias)
            assert torch.allclose(torch.cat([b[layer, i] for layer in range(L)]), y, atol=1e-6)
    gru = build_model(make_opt(bridge=True, rnn_type="GRU"), vocabs)
    assert len(gru.encoder.bridge) == 1
    assert build_model(make_opt(), vocabs).encoder.bridge is None
    with pytest.raises(opts.OptionError, match="-bridge"):
        _model_opt("-reinforced", "-bridge")


def test_copy_attention_options():
    assert _model_opt("-copy_attn", "-reuse_copy_attn").reuse_copy_attn
    assert _model_opt("-copy_attn", "-copy_attn_type", "general").copy_attn_type == "general"
    with pytest.raises(opts.OptionError, match="IS|is the decoder's attention"):
        _model_opt("-copy_attn", "-copy_attn_type", "mlp")
    with pytest.raises(opts.OptionError, match="needs -copy_attn"):
        _model_opt("-reuse_copy_attn")
    with pytest.raises(opts.OptionError, match="-copy_attn_type"):
        _model_opt("-reinforced", "-copy_attn_type", "general")


def test_copy_loss_by_seqlength_divides_each_example_by_its_length():
    vocabs = make_vocabs()
    torch.manual_seed(0)
    model = build_model(make_opt(copy_attn=True, coverage_attn=True), vocabs)
    batch = make_batch(vocabs, seed=4)
    plain, stats = MLLoss(lambda_coverage=0.5)(model, batch)
    by_len, stats2 = MLLoss(lambda_coverage=0.5, by_seqlength=True)(model, batch)
    ll, _, attns = model.gold_log_likelihood(batch)                    # (B, T-1)
    lengths = (batch.tgt[:, 1:] != PAD).sum(-1).float()               # gold tokens per example
    cov = torch.minimum(attns["std"], attns["coverage"]).sum(-1)      # (B, T-1)
    cov = cov.masked_fill(batch.tgt[:, 1:] == PAD, 0.0).sum(-1)       # (B,)
    expected = ((-ll.sum(-1) + 0.5 * cov) / lengths).sum()
    assert torch.allclose(by_len, expected) and not torch.allclose(by_len, plain)
    assert stats.loss == stats2.loss   # the statistics keep the plain sum


# --------------------------------------------------------------------------- 5. -normalization
def test_normalization_sents_divides_by_the_examples(tmp_path):
    from onmt.trainer import Trainer
    vocabs = make_vocabs()
    batch = make_batch(vocabs, seed=5)
    grads = {}
    for norm in ("tokens", "sents"):
        torch.manual_seed(0)
        model = build_model(make_opt(), vocabs)
        optim = torch.optim.SGD(model.parameters(), lr=0.0)
        trainer = Trainer(model, MLLoss(), optim, save_model=str(tmp_path / "m"), max_grad_norm=0.0,
                          normalization=norm)
        trainer.train_step(batch, 1)
        grads[norm] = [p.grad.clone() for p in model.parameters()]
    ratio = batch.n_tgt_tokens / batch.batch_size
    for t, s in zip(grads["tokens"], grads["sents"]):
        assert torch.allclose(s, t * ratio, rtol=1e-5, atol=1e-7)
    assert opts.train_parser().parse_args(["-data", "d"]).normalization == "tokens"


def test_the_training_flags_together_through_train_py(data, tmp_path):
    _train(data, str(tmp_path / "u"), "-copy_attn", "-copy_loss_by_seqlength", "-normalization", "sents",
           "-bridge", "-share_decoder_embeddings", "-word_vec_size", "8", "-encoder_type", "brnn",
           "-hidden_size", "8", "-learning_rate_decay", "0.5", "-start_decay_steps", "2", "-decay_steps", "1",
           "-train_steps", "3")
    ckpt = _ckpt(tmp_path / "u_step_3.pt")
    assert ckpt["optim"]["param_groups"][0]["lr"] == 0.5 * 0.25
    assert "encoder.bridge.0.weight" in ckpt["model"] and ckpt["opt"]["normalization"] == "sents"
    from onmt.errors import UserError
    with pytest.raises(UserError, match="-copy_loss_by_seqlength needs a copy model"):
        _train(data, str(tmp_path / "v"), "-copy_loss_by_seqlength", "-train_steps", "1")


# --------------------------------------------------------------------------- 6. preprocessing, -save_config
import os  # noqa: E402

from onmt.bin import preprocess as preprocess_bin  # noqa: E402
from onmt.inputters.vocab_builder import load_vocabs  # noqa: E402


def _text(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _corpus(tmp_path):
    src = _text(tmp_path / "s.txt", ["a b c d", "a b e", "c c f g h i j k l", "b a"])
    tgt = _text(tmp_path / "t.txt", ["x y", "y z", "x", "z z z z z z z z"])
    return ["-train_src", src, "-train_tgt", tgt, "-valid_src", src, "-valid_tgt", tgt]


def test_vocabulary_files_are_taken_as_given(tmp_path):
    vs = _text(tmp_path / "vs.txt", ["<unk>", "zeta 7", "b", "a\t3", "zeta 1", "", "q"])
    vt = _text(tmp_path / "vt.txt", ["y 2", "nope"])
    preprocess_bin.main([*_corpus(tmp_path), "-save_data", str(tmp_path / "p"), "-src_vocab", vs,
                         "-tgt_vocab", vt, "-src_vocab_size", "7"])
    vocabs, _ = load_vocabs(str(tmp_path / "p"))
    assert vocabs.src.itos[4:] == ["zeta", "b", "a"] and vocabs.tgt.itos[4:] == ["y", "nope"]
    preprocess_bin.main([*_corpus(tmp_path), "-save_data", str(tmp_path / "q"), "-src_vocab", vs,
                         "-share_vocab", "-tgt_vocab_size", "5", "-overwrite", "-filter_valid"])
    vocabs, _ = load_vocabs(str(tmp_path / "q"))
    assert vocabs.src.itos[4:] == ["zeta", "b", "a", "q"] and vocabs.tgt.itos[4:] == ["zeta"]
    # this project's own vocabulary file reads back as the same vocabulary
    preprocess_bin.main([*_corpus(tmp_path), "-save_data", str(tmp_path / "r"),
                         "-src_vocab", str(tmp_path / "p.src.vocab.txt")])
    assert load_vocabs(str(tmp_path / "r"))[0].src.itos == load_vocabs(str(tmp_path / "p"))[0].src.itos
    with pytest.raises(opts.OptionError, match="one vocabulary file"):
        preprocess_bin.main([*_corpus(tmp_path), "-save_data", str(tmp_path / "s"), "-share_vocab",
                             "-tgt_vocab", vt])


def test_valid_split_is_filtered_like_train(tmp_path):
    preprocess_bin.main([*_corpus(tmp_path), "-save_data", str(tmp_path / "p"), "-src_seq_length", "5"])
    _, meta = load_vocabs(str(tmp_path / "p"))
    assert meta["summary"]["valid"]["kept"] == meta["summary"]["train"]["kept"] == 3


def test_save_config_writes_the_options_and_exits(tmp_path):
    cfg = str(tmp_path / "train.yaml")
    argv = ["-data", "d", "-encoder_type", "brnn", "-hidden_size", "64", "-decay_method", "noam",
            "-copy_attn", "-bridge", "-normalization", "sents"]
    train_bin.main([*argv, "-save_model", str(tmp_path / "m"), "-save_config", cfg])
    assert os.path.isfile(cfg) and not (tmp_path / "m_step_1.pt").exists()
    direct = opts.parse_with_given(opts.train_parser(), [*argv, "-save_model", str(tmp_path / "m")])
    again = opts.parse_with_given(opts.train_parser(), ["-config", cfg])
    for o in (direct, again):   # the written options are the resolved ones (early-stopping criteria: ppl)
        opts.update_train_opts(o)
    assert opts.saved_options(again) == {**opts.saved_options(direct), "config": cfg}
    pcfg = str(tmp_path / "prep.yaml")
    preprocess_bin.main([*_corpus(tmp_path), "-save_data", str(tmp_path / "p"), "-share_vocab",
                         "-save_config", pcfg])
    assert not (tmp_path / "p.meta.json").exists()
    back = opts.preprocess_parser().parse_args(["-config", pcfg])
    assert back.share_vocab and back.save_data == str(tmp_path / "p") and back.save_config is None


@pytest.mark.parametrize("argv", [["-reinforced"], ["-copy_attn", "-decay_method", "noam", "-warmup_steps", "8000"],
                                  ["-reinforced", "-rl_gamma", "0.9", "-optim", "sgd"]])
def test_save_config_output_loads_unchanged(tmp_path, argv):
    """-save_config writes what was given and implied, not every default (a written default counted as
    given: -warmup_steps 4000 was then refused without -decay_method noam); the file reads back to the
    same options and writes itself again byte for byte."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    train_bin.main(["-data", "d", *argv, "-save_config", str(first)])
    train_bin.main(["-config", str(first), "-save_config", str(second)])
    assert first.read_bytes() == second.read_bytes()
    direct = opts.parse_with_given(opts.train_parser(), ["-data", "d", *argv])
    back = opts.parse_with_given(opts.train_parser(), ["-config", str(first)])
    for o in (direct, back):
        opts.update_train_opts(o)
        opts.update_model_opts(o)
    assert {**opts.saved_options(back), "config": None} == {**opts.saved_options(direct), "config": None}

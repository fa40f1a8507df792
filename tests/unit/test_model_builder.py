"""Registry, initialization, shared embeddings, pretrained vectors, checkpoint state."""
import pytest
import torch

from helpers.models import make_batch, make_opt, make_vocabs
from onmt.constants import PAD
from onmt.errors import UserError
from onmt.execution import PLAIN, Execution
from onmt.losses import build_loss
from onmt.losses.ml import MLLoss
from onmt.model_builder import MODEL_REGISTRY, build_model, model_entry
from onmt.models.fused import FusedCopyNMTModel, FusedNMTModel
from onmt.models.seq2seq import CopyNMTModel, NMTModel
from onmt.reinforced.fused import FusedReinforcedModel
from onmt.reinforced.model import ReinforcedModel


def test_registry_and_selection():
    assert set(MODEL_REGISTRY) >= {"rnn", "copy"}
    assert model_entry(make_opt()).name == "rnn"
    assert model_entry(make_opt(copy_attn=True)).name == "copy"
    assert MODEL_REGISTRY["rnn"].model_cls is NMTModel and MODEL_REGISTRY["copy"].model_cls is CopyNMTModel
    entry = model_entry(make_opt(copy_attn=True))
    assert entry.name == "copy" and entry.model_cls.__name__ == "CopyNMTModel"
    assert isinstance(build_loss(make_opt(copy_attn=True)), MLLoss)
    assert isinstance(build_model(make_opt(copy_attn=True), make_vocabs()), CopyNMTModel)


FAMILY_CLASSES = {"rnn": (NMTModel, FusedNMTModel), "copy": (CopyNMTModel, FusedCopyNMTModel),
                  "reinforced": (ReinforcedModel, FusedReinforcedModel)}


@pytest.mark.parametrize("family", sorted(FAMILY_CLASSES))
def test_the_registry_builds_the_fused_subclass_exactly_when_the_execution_says_fused(family):
    plain_cls, fused_cls = FAMILY_CLASSES[family]
    entry = MODEL_REGISTRY[family]
    assert (entry.model_cls, entry.fused_cls) == (plain_cls, fused_cls) and issubclass(fused_cls, plain_cls)
    opt = make_opt(model_family=family)
    for execution in (PLAIN, Execution(kernels="plain", compile="decoder-step"), Execution(),
                      Execution.for_decoding("int8"), "plain", "fused", None):
        want = plain_cls if execution in (PLAIN, "plain") or getattr(execution, "kernels", "") == "plain" else fused_cls
        assert entry.model_class(execution) is want, execution
        model = build_model(opt, make_vocabs(), execution=execution)
        assert type(model) is want and model.kernels == ("fused" if want is fused_cls else "plain")


def test_check_data():
    model_entry(make_opt(copy_attn=True)).check_data(make_opt(), {"dynamic_dict": True, "share_vocab": False})
    with pytest.raises(UserError, match="dynamic_dict"):
        model_entry(make_opt(copy_attn=True)).check_data(make_opt(), {"dynamic_dict": False})
    with pytest.raises(UserError, match="share_vocab"):
        opt = make_opt(share_embeddings=True)
        model_entry(opt).check_data(opt, {"dynamic_dict": True, "share_vocab": False})
    model_entry(make_opt()).check_data(make_opt(), {"dynamic_dict": False, "share_vocab": False})


def test_param_init_uniform_and_pad_rows_zero():
    model = build_model(make_opt(param_init=0.05), make_vocabs(shared=False))
    for p in model.parameters():
        assert p.abs().max() <= 0.05
    assert (model.encoder.embeddings.weight[PAD] == 0).all()
    assert (model.decoder.embeddings.weight[PAD] == 0).all()


def test_shared_embeddings_share_storage_and_gradients():
    opt = make_opt(share_embeddings=True, copy_attn=True)
    vocabs = make_vocabs()
    model = build_model(opt, vocabs)
    enc_w, dec_w = model.encoder.embeddings.weight, model.decoder.embeddings.weight
    assert enc_w is dec_w and enc_w.data_ptr() == dec_w.data_ptr()
    n_emb = sum(1 for n, _ in model.named_parameters() if "embeddings" in n)
    assert n_emb == 1
    batch = make_batch(vocabs, seed=1)
    # gradient from the encoder side alone and from the decoder side alone both reach it
    enc_out = model.encode(batch)
    enc_out.memory.sum().backward()
    assert enc_w.grad[batch.src[0, 0]].abs().sum() > 0
    model.zero_grad()
    dec_emb = model.embed_target(batch.tgt[:, :1])
    dec_emb.sum().backward()
    assert enc_w.grad[batch.tgt[0, 0]].abs().sum() > 0


def test_share_embeddings_needs_shared_vocab():
    with pytest.raises(UserError):
        build_model(make_opt(share_embeddings=True), make_vocabs(shared=False))


def test_pretrained_vectors(tmp_path):
    vocabs = make_vocabs(shared=False)
    path = tmp_path / "glove.txt"
    path.write_text("w0 " + " ".join(["0.5"] * 6) + "\nt1 " + " ".join(["0.25"] * 6) + "\n")
    opt = make_opt(pre_word_vecs_enc=str(path), pre_word_vecs_dec=str(path))
    model = build_model(opt, vocabs)
    assert (model.encoder.embeddings.weight[vocabs.src.stoi["w0"]] == 0.5).all()
    assert (model.decoder.embeddings.weight[vocabs.tgt.stoi["t1"]] == 0.25).all()


def test_checkpoint_state_restores_parameters():
    opt = make_opt(copy_attn=True, coverage_attn=True, brnn=True)
    vocabs = make_vocabs()
    torch.manual_seed(0)
    a = build_model(opt, vocabs)
    torch.manual_seed(1)
    b = build_model(opt, vocabs, checkpoint_state=a.state_dict())
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and torch.equal(pa, pb)


@pytest.mark.slow   # torch.compile's first call builds C++ kernels: ~30 s on the CPU
def test_compiled_decoder_step_gives_the_same_loss_and_gradients():
    """train.py -compile: the reinforced model's ML loss (scheduled sampling on) and its gradients through
    the compiled decoder step equal the eager ones to float32 rounding, and the step was compiled."""
    from torch._dynamo.utils import counters

    from helpers.reinforced import _batch, _model
    from onmt.execution import compile_step
    from onmt.hardware import compile_problem
    if compile_problem("cpu"):
        pytest.skip(compile_problem("cpu"))
    batch = _batch(seed=1, B=4, S=7, T=6)
    losses, grads = [], []
    counters.clear()
    for compiled in (False, True):
        model = _model("-scheduled_sampling", "0.25", seed=0).train()
        if compiled:
            compile_step(model.decoder)   # what a decoder built with Execution(compile="decoder-step") does
            assert "step" in vars(model.decoder)
        torch.manual_seed(5)   # the same scheduled-sampling draws
        loss, stats = MLLoss()(model, batch)
        (loss / stats.n_words).backward()
        losses.append(loss.item())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert counters["frames"]["ok"] > 0   # dynamo compiled frames of the step
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    assert grads[1].keys() == grads[0].keys() and len(grads[0]) > 5
    for name, g in grads[0].items():
        assert torch.allclose(grads[1][name], g, rtol=1e-4, atol=1e-6), name

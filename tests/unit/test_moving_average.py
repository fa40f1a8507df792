"""-average_decay (onmt/utils/moving_average.py, upstream OpenNMT-py's semantics): the update rule,
the average applied for validation and given back bit for bit, and, through train.py on tiny data:
decay 0 is no average bit for bit, checkpoints hold the average as "model" (what translate.py reads)
and the trained weights as "train_model", and N + N resumed steps equal 2N steps in one run."""
import pytest
import torch

from helpers.e2e import random_pair_data
from onmt.bin import train as train_bin
from onmt.utils.moving_average import MovingAverage, applied, parameter_names


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 3)
        self.b = torch.nn.Linear(3, 3)
        self.b.weight = self.a.weight       # one parameter, two names


def test_the_update_is_upstreams_rule():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 2)
    avg = MovingAverage(0.01, every=2)
    avg.update(m, 1)                                   # the first: a copy
    first = {n: p.detach().clone() for n, p in m.named_parameters()}
    assert all(torch.equal(avg.average[n], first[n]) for n in first)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(1.0)
    avg.update(m, 2)                                   # not due (every 2: steps 1, 3, 5, ...)
    assert all(torch.equal(avg.average[n], first[n]) for n in first)
    avg.update(m, 3)
    d = max(0.01, 1 - 4 / 13)
    for n, p in m.named_parameters():
        assert torch.allclose(avg.average[n], (1 - d) * first[n] + d * p.detach(), atol=1e-7)
    big = MovingAverage(0.5)
    big.update(m, 1)
    with torch.no_grad():
        m.weight.add_(2.0)
    want = 0.5 * (m.weight.detach() - 2) + 0.5 * m.weight.detach()    # max(0.5, 9 / 1010) = 0.5
    big.update(m, 1000)
    assert torch.allclose(big.average["weight"], want)


def test_applied_gives_the_weights_back_bit_for_bit():
    torch.manual_seed(1)
    m = Tied()
    avg = MovingAverage(0.3)
    avg.update(m, 1)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(1.7).add_(0.1)
    avg.update(m, 2)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with avg.applied(m):
        assert torch.equal(m.a.weight, avg.average["a.weight"]) and m.b.weight is m.a.weight
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    with applied(None, m):          # no average: nothing to do
        pass


def test_state_dict_keeps_tied_names_one_tensor():
    m = Tied()
    assert parameter_names(m) == {"a.weight": "a.weight", "a.bias": "a.bias", "b.weight": "a.weight",
                                  "b.bias": "b.bias"}
    avg = MovingAverage(0.1)
    assert avg.checkpoint_weights(m) == {}              # before the first update
    avg.update(m, 1)
    state = avg.checkpoint_weights(m)
    assert state["model"]["a.weight"] is state["model"]["b.weight"]
    assert set(state["train_model"]) == set(m.state_dict())


def test_restore_takes_the_average_back():
    torch.manual_seed(2)
    m = torch.nn.Linear(3, 2)
    avg = MovingAverage(0.1)
    avg.update(m, 1)
    with torch.no_grad():
        m.weight.add_(1)
    avg.update(m, 2)
    other = MovingAverage(0.1)
    assert other.restore(avg.checkpoint_weights(m), m, log=False)
    assert all(torch.equal(other.average[n], avg.average[n]) for n in avg.average)
    assert not other.restore({"model": m.state_dict()}, m, log=False) and other.average is None


# ---------------------------------------------------------------------------------- through train.py
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("ema")), seed=1, n_examples=64, max_len=7,
                            target=lambda words: words[: max(2, len(words) - 2)])


COPY = ["-layers", "1", "-rnn_size", "12", "-word_vec_size", "6", "-brnn", "-copy_attn", "-dropout", "0.1",
        "-optim", "adam", "-learning_rate", "0.01"]


def _train(data, save, *more_args):
    train_bin.main(["-data", data, "-save_model", save, *COPY, "-batch_size", "16", "-report_every", "2",
                    "-valid_steps", "3", "-save_checkpoint_steps", "3", "-seed", "5", *more_args])


def _ckpt(path):
    return torch.load(path, weights_only=True)


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_decay_zero_is_no_average_bit_for_bit(data, tmp_path, one_torch_thread):
    _train(data, str(tmp_path / "plain"), "-train_steps", "4")
    _train(data, str(tmp_path / "zero"), "-train_steps", "4", "-average_decay", "0", "-average_every", "3")
    a, b = _ckpt(tmp_path / "plain_step_4.pt"), _ckpt(tmp_path / "zero_step_4.pt")
    assert _same(a["model"], b["model"]) and "train_model" not in b
    assert (tmp_path / "zero_best.pt").exists()


def test_average_resumes_n_plus_n_as_2n(data, tmp_path, one_torch_thread):
    ema = ["-average_decay", "0.05", "-average_every", "2"]
    _train(data, str(tmp_path / "one"), "-train_steps", "12", *ema)
    _train(data, str(tmp_path / "two"), "-train_steps", "6", *ema)
    # -average_decay not given again: the checkpoint's
    _train(data, str(tmp_path / "two"), "-train_steps", "12", "-train_from", str(tmp_path / "two_step_6.pt"))
    a, b = _ckpt(tmp_path / "one_step_12.pt"), _ckpt(tmp_path / "two_step_12.pt")
    assert _same(a["model"], b["model"]) and _same(a["train_model"], b["train_model"])
    assert b["opt"]["average_decay"] == 0.05 and b["opt"]["average_every"] == 2
    assert not _same(a["model"], a["train_model"])        # the average is not the weights
    best = _ckpt(tmp_path / "one_best.pt")
    assert "train_model" in best      # the best is chosen, and saved, with the average


def test_a_new_phase_starts_its_own_average(data, tmp_path, one_torch_thread):
    _train(data, str(tmp_path / "ml"), "-train_steps", "6", "-average_decay", "0.05")
    log = tmp_path / "phase.log"
    _train(data, str(tmp_path / "phase"), "-train_steps", "7", "-train_from", str(tmp_path / "ml_step_6.pt"),
           "-log_file", str(log))
    ml, phase = _ckpt(tmp_path / "ml_step_6.pt"), _ckpt(tmp_path / "phase_step_7.pt")
    assert "no moving average goes on from" in log.read_text()
    # the new average started at step 7 as a copy of the weights: the two are equal
    assert _same(phase["model"], phase["train_model"]) and not _same(phase["model"], ml["model"])


def test_translation_reads_the_average(data, tmp_path, one_torch_thread):
    from onmt.translate.session import load_session
    _train(data, str(tmp_path / "m"), "-train_steps", "3", "-average_decay", "0.1")
    ckpt = _ckpt(tmp_path / "m_step_3.pt")
    session = load_session(str(tmp_path / "m_step_3.pt"), torch.device("cpu"))
    state = session.model.state_dict()
    assert all(torch.equal(state[k], ckpt["model"][k]) for k in state)
    assert not all(torch.equal(state[k], ckpt["train_model"][k]) for k in state)


def test_bad_values_are_refused():
    from onmt import opts
    from onmt.opts import OptionError
    for args, msg in ((["-average_decay", "1"], "-average_decay must be in"),
                      (["-average_decay", "-0.1"], "-average_decay must be in"),
                      (["-average_every", "0"], "-average_every must be 1 or more")):
        opt = opts.parse_with_given(opts.train_parser(), ["-data", "x", *args])
        opts.update_train_opts(opt)
        with pytest.raises(OptionError, match=msg):
            opts.validate_train_opts(opt)

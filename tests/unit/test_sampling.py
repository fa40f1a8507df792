"""onmt/modules/sampling.py: one draw per row; scheduled sampling's schedule, in training too."""
import pytest
import torch

from helpers.e2e import random_pair_data
from onmt.bin import train as train_bin
from onmt.errors import OptionError
from onmt.modules.sampling import SamplingSchedule, sample_rows, sample_tokens


def test_sample_rows_draws_in_proportion_and_never_a_zero_weight():
    torch.manual_seed(0)
    weights = torch.tensor([[0.0, 1.0, 3.0, 0.0], [5.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    draws = torch.stack([sample_rows(weights) for _ in range(4000)])  # (4000, 3)
    freq = torch.stack([torch.bincount(draws[:, r], minlength=4) for r in range(3)]).double() / 4000
    assert torch.allclose(freq, (weights / weights.sum(1, keepdim=True)).double(), atol=0.03)
    assert (freq[weights == 0] == 0).all()


# --------------------------------------------------------------------------- scheduled sampling's schedule
def _reference_rate(rate, start, ramp, step):
    """Written out: nothing for the first `start` steps, then k / ramp of the rate at the k-th step after."""
    if step <= start:
        return 0.0
    k = step - start
    if ramp == 0 or k >= ramp:
        return rate
    return rate * k / ramp


@pytest.mark.parametrize("rate,start,ramp", [(0.25, 0, 0), (0.25, 3, 0), (0.5, 0, 4), (1.0, 2, 3), (0.0, 5, 5)])
def test_the_schedule_is_the_written_out_rule(rate, start, ramp):
    schedule = SamplingSchedule(rate, start, ramp)
    assert [schedule.at(s) for s in range(1, 15)] == pytest.approx(
        [_reference_rate(rate, start, ramp, s) for s in range(1, 15)], abs=1e-15)


@pytest.mark.parametrize("args", [(1.5, 0, 0), (-0.1, 0, 0), (0.25, -1, 0), (0.25, 0, -2)])
def test_an_impossible_schedule_is_refused(args):
    with pytest.raises(ValueError, match="sampling schedule"):
        SamplingSchedule(*args)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return random_pair_data(str(tmp_path_factory.mktemp("sampling")), seed=1, n_examples=64, max_len=8,
                            target=lambda words: words)


TRAIN = ["-reinforced", "-layers", "1", "-rnn_size", "16", "-word_vec_size", "8", "-dropout", "0", "-optim",
         "adam", "-learning_rate", "0.01", "-batch_size", "16", "-report_every", "1", "-valid_steps", "100",
         "-seed", "5", "-scheduled_sampling", "1.0", "-scheduled_sampling_start", "2",
         "-scheduled_sampling_ramp", "2"]


def test_training_follows_the_schedule_step_by_step(data, tmp_path):
    """Steps 1-2 feed back nothing, step 3 about half of what step 4 (the full rate 1.0) feeds back."""
    log = tmp_path / "train.log"
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "m"), "-train_steps", "4", "-log_file", str(log),
                    *TRAIN])
    shares = {}
    for line in log.read_text().splitlines():
        if "of decoder inputs were the model's own predictions" in line:
            step = int(line.split("Step ")[1].split(":")[0])
            shares[step] = float(line.split("Step %d: " % step)[1].split("%")[0])
    assert sorted(shares) == [3, 4]
    assert 0.25 * shares[4] < shares[3] < 0.75 * shares[4] and shares[4] > 50.0


def test_a_resumed_run_goes_on_with_the_schedule(data, tmp_path):
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "a"), "-train_steps", "4", *TRAIN])
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "b"), "-train_steps", "3", *TRAIN])
    train_bin.main(["-data", data, "-save_model", str(tmp_path / "b"), "-train_steps", "4", *TRAIN,
                    "-train_from", str(tmp_path / "b_step_3.pt")])
    a = torch.load(tmp_path / "a_step_4.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "b_step_4.pt", weights_only=True)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_schedule_is_the_reinforced_models_own(data, tmp_path):
    with pytest.raises(OptionError, match="-scheduled_sampling_start only applies to -reinforced"):
        train_bin.main(["-data", data, "-save_model", str(tmp_path / "m"), "-scheduled_sampling_start", "5"])
    with pytest.raises(OptionError, match="-scheduled_sampling_ramp must be >= 0, got -1"):
        train_bin.main(["-data", data, "-save_model", str(tmp_path / "m"), "-reinforced",
                        "-scheduled_sampling_ramp", "-1"])
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- test-time sampling's draws
def _top_k_reference(logp, k, p, temp):
    """Row by row, written out: the allowed tokens of top-k (k <= 0: all) and the nucleus p (0: all), and the
    normalized probabilities over them."""
    out = torch.zeros_like(logp, dtype=torch.float64)
    for r in range(logp.size(0)):
        probs = (logp[r].double() / temp).softmax(0)
        order = sorted(range(logp.size(1)), key=lambda j: -probs[j].item())
        keep, mass = [], 0.0
        for rank, j in enumerate(order):
            if (k > 0 and rank >= k) or (p > 0 and mass >= p):
                break
            keep.append(j)
            mass += probs[j].item()
        for j in keep:
            out[r, j] = probs[j]
        out[r] /= out[r].sum()
    return out


@pytest.mark.parametrize("k,p,temp", [(0, 0.0, 1.0), (2, 0.0, 1.0), (0, 0.6, 1.0), (3, 0.5, 0.7), (-1, 0.0, 2.0)])
def test_sample_tokens_draws_from_the_top_k_and_the_nucleus_in_proportion(k, p, temp):
    torch.manual_seed(0)
    logp = torch.tensor([[0.1, 2.0, 1.0, float("-inf"), 0.5], [1.5, 1.4, -1.0, 0.0, float("-inf")]]).log_softmax(1)
    draws = torch.stack([sample_tokens(logp, k, p, temp) for _ in range(6000)])   # (6000, 2)
    freq = torch.stack([torch.bincount(draws[:, r], minlength=5) for r in range(2)]).double() / 6000
    want = _top_k_reference(logp, k, p, temp)
    assert torch.allclose(freq, want, atol=0.025), (freq, want)
    assert (freq[want == 0] == 0).all()


def test_sample_tokens_repeats_with_a_seeded_generator():
    logp = torch.randn(6, 40).log_softmax(1)
    draws = [sample_tokens(logp, 10, 0.9, 0.8, torch.Generator().manual_seed(3)) for _ in range(2)]
    assert torch.equal(draws[0], draws[1])
    other = torch.stack([sample_tokens(logp, 0, 0.0, 1.0, torch.Generator().manual_seed(s)) for s in range(5)])
    assert len({tuple(r) for r in other.tolist()}) > 1

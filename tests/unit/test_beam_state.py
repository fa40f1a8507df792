"""BeamState: `reorder` and `select` move every tensor of the beam in lockstep (property tests on
random beams), and a real model's decoder state follows them."""
import dataclasses

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.checkpoints import VOCABS, build_tiny
from helpers.toy_models import ToyState, toy_batches
from onmt.translate.beam_state import BeamState

PROPS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow])


def random_beam(B, W, S, t, n_best, seed, optional=True):
    """A beam of B examples x W rows whose every row (and example) holds distinct values."""
    g = torch.Generator().manual_seed(seed)
    R = B * W
    state = ToyState(memory=torch.randn(R, S, 3, generator=g), mask=torch.rand(R, S, generator=g) < 0.7,
                     src_ex=torch.randint(0, 50, (R, S), generator=g), hidden=torch.randn(R, 3, generator=g),
                     history=torch.randint(0, 50, (R, t), generator=g), n_oov=2)
    extra = {}
    if optional:
        extra = dict(attn=torch.rand(R, t, S, generator=g),
                     inspected={"p_copy": torch.rand(R, t, generator=g), "intra": torch.rand(R, t, t, generator=g)},
                     cov=torch.rand(R, S, generator=g) * 3, cov_mask=torch.rand(R, S, generator=g) < 0.8)
    return BeamState(state=state, inputs=torch.arange(R) * 7 + 1, history=torch.randint(0, 50, (R, t), generator=g),
                     scores=torch.randn(B, W, generator=g), raw=torch.randn(B, W, generator=g),
                     kept=torch.randn(B, n_best, generator=g), example=torch.randperm(B + 3, generator=g)[:B],
                     **extra)


def tensors(beam):
    """Every tensor of the beam, decoder state included: name -> (tensor, is a row field)."""
    out = {}
    for f in dataclasses.fields(beam):
        value = getattr(beam, f.name)
        if isinstance(value, ToyState):
            for g in dataclasses.fields(value):
                if torch.is_tensor(getattr(value, g.name)):
                    out[f"state.{g.name}"] = (getattr(value, g.name), True)
        elif isinstance(value, dict):
            out.update({f"{f.name}.{k}": (v, True) for k, v in value.items()})
        elif value is not None:
            out[f.name] = (value, f.name not in BeamState.EXAMPLE_FIELDS)
    return out


def assert_same(a, b):
    ta, tb = tensors(a), tensors(b)
    assert ta.keys() == tb.keys()
    for name in ta:
        assert torch.equal(ta[name][0], tb[name][0]), name


shapes = st.tuples(st.integers(1, 5), st.integers(1, 4), st.integers(1, 6), st.integers(0, 5), st.integers(1, 3),
                   st.integers(0, 10 ** 6), st.booleans())


@PROPS
@given(shapes, st.data())
def test_reorder_by_a_permutation_then_its_inverse_is_the_identity(shape, data):
    B, W, S, t, n_best, seed, optional = shape
    beam = random_beam(B, W, S, t, n_best, seed, optional)
    R = B * W
    perm = torch.tensor(data.draw(st.permutations(range(R))), dtype=torch.long)
    moved = beam.reorder(perm)
    for name, (value, is_row) in tensors(moved).items():
        old = tensors(beam)[name][0]
        assert torch.equal(value, old[perm] if is_row else old), name   # row i is old row perm[i]
    assert_same(moved.reorder(torch.argsort(perm)), beam)


@PROPS
@given(shapes, st.data())
def test_reorder_follows_backpointers_and_may_grow_the_rows(shape, data):
    B, W, S, t, n_best, seed, optional = shape
    beam = random_beam(B, W, S, t, n_best, seed, optional)
    K = data.draw(st.integers(1, 4))
    # each new row copies a row of its own example, as beam backpointers do
    origin = torch.tensor(data.draw(st.lists(st.integers(0, W - 1), min_size=B * K, max_size=B * K)))
    rows = torch.arange(B).repeat_interleave(K) * W + origin                          # (B*K,)
    for within_source in (False, True):
        moved = beam.reorder(rows, within_source=within_source)
        for name, (value, is_row) in tensors(moved).items():
            old = tensors(beam)[name][0]
            if not is_row or (within_source and name in BeamState.SOURCE_FIELDS):
                # untouched: example fields, and source-only fields of a reorder within the source
                assert value is old, name
            else:
                assert torch.equal(value, old[rows]), name


def test_reorder_replacing_sets_the_overwritten_field_and_moves_the_rest():
    """A step's next inputs are its new tokens: `replacing` sets them (never reordering the old
    inputs), every other row field still follows the rows; only row fields can be replaced."""
    beam = random_beam(3, 2, 4, 2, 1, seed=5)
    rows = torch.tensor([1, 1, 0, 2, 3, 3, 5, 4, 4])                                    # (B*K,), K = 3
    new_inputs = torch.arange(9) + 100
    moved = beam.reorder(rows, within_source=False, replacing={"inputs": new_inputs})
    plain = beam.reorder(rows)
    assert moved.inputs is new_inputs
    assert_same(dataclasses.replace(moved, inputs=plain.inputs), plain)
    with pytest.raises(ValueError):
        beam.reorder(rows, replacing={"scores": torch.zeros(3, 3)})


@PROPS
@given(shapes, st.data())
def test_select_keeps_exactly_the_chosen_examples_in_every_field(shape, data):
    B, W, S, t, n_best, seed, optional = shape
    beam = random_beam(B, W, S, t, n_best, seed, optional)
    keep = torch.tensor(data.draw(st.lists(st.integers(0, B - 1), min_size=1, max_size=B, unique=True)))
    out = beam.select(keep)
    rows = torch.cat([torch.arange(W) + int(b) * W for b in keep])                    # (B'*W,)
    before, after = tensors(beam), tensors(out)
    assert before.keys() == after.keys()
    for name, (value, is_row) in after.items():
        assert torch.equal(value, before[name][0][rows if is_row else keep]), name
    assert out.width == W and out.state.n_oov == beam.state.n_oov


@pytest.mark.parametrize("family", ["rnn", "copy", "reinforced"])
def test_a_model_state_follows_the_beam(family):
    """A real decoder state moved by the beam decodes as the state of the rows it was built from."""
    model, _ = build_tiny(family)
    batch = next(toy_batches(["w0 w7 w2", "w3 w9", "w5 w6 w8 w1"], None, VOCABS, 3))
    state = model.init_state(batch, model.encode(batch))
    B, W = 3, 2
    beam = BeamState(state=state.reorder(torch.arange(B).repeat_interleave(W)), inputs=torch.full((B * W,), 2),
                     history=torch.zeros(B * W, 0, dtype=torch.long), scores=torch.zeros(B, W),
                     raw=torch.zeros(B, W), kept=torch.zeros(B, 1), example=torch.arange(B))
    inputs = torch.tensor([2, 4, 5, 2, 6, 4])                                          # (B*W,)
    with torch.no_grad():
        _, stepped, _ = model.decode_step(inputs, beam.state)
        beam = dataclasses.replace(beam, state=stepped, inputs=inputs)
        keep = torch.tensor([2, 0])
        chosen = beam.select(keep).reorder(torch.tensor([1, 1, 3, 2]), within_source=True)
        rows = torch.tensor([4, 5, 0, 1])[torch.tensor([1, 1, 3, 2])]                  # rows of the full beam
        logp, _, _ = model.decode_step(torch.tensor([4, 5, 6, 7]), chosen.state)
        want, _, _ = model.decode_step(torch.tensor([4, 5, 6, 7]), beam.state.reorder(rows))
    assert torch.equal(chosen.inputs, inputs[rows])
    assert torch.equal(logp, want)

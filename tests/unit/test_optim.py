"""onmt/utils/optim.py: the optimizers (fused kernels where PyTorch has them) against their update rules
written out here, and loading a checkpoint's optimizer state."""
import argparse
import io

import pytest
import torch

from onmt.utils.optim import build_optimizer, load_optimizer_state


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3, generator=g)), torch.nn.Parameter(torch.randn(7, generator=g))]


def _grads(step, params):
    g = torch.Generator().manual_seed(100 + step)
    return [torch.randn(p.shape, generator=g) for p in params]


def _reference_adam(params, steps, lr, b1, b2, eps=1e-8):
    out = []
    for p0 in params:
        out.append(p0.detach().clone())
    m = [torch.zeros_like(p) for p in out]
    v = [torch.zeros_like(p) for p in out]
    for t in range(1, steps + 1):
        for i, g in enumerate(_grads(t, out)):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            m_hat, v_hat = m[i] / (1 - b1 ** t), v[i] / (1 - b2 ** t)
            out[i] = out[i] - lr * m_hat / (v_hat.sqrt() + eps)
    return out


def _reference_adagrad(params, steps, lr, init, eps=1e-10):
    out = [p.detach().clone() for p in params]
    acc = [torch.full_like(p, init) for p in out]
    for t in range(1, steps + 1):
        for i, g in enumerate(_grads(t, out)):
            acc[i] = acc[i] + g * g
            out[i] = out[i] - lr * g / (acc[i].sqrt() + eps)
    return out


def _run(optimizer, params, steps, start=1):
    for t in range(start, start + steps):
        for p, g in zip(params, _grads(t, params)):
            p.grad = g
        optimizer.step()


def test_adam_is_fused_on_cpu_and_follows_its_update_rule():
    params = _params()
    opt = build_optimizer(params, "adam", 0.01, adam_beta1=0.8, adam_beta2=0.95)
    assert opt.param_groups[0]["fused"] is True
    ref = _reference_adam(params, 6, 0.01, 0.8, 0.95)
    _run(opt, params, 6)
    for p, r in zip(params, ref):
        torch.testing.assert_close(p.detach(), r, rtol=1e-5, atol=1e-6)


def test_adagrad_and_sgd_follow_their_update_rules():
    params = _params()
    opt = build_optimizer(params, "adagrad", 0.1, adagrad_accumulator_init=0.1)
    assert opt.param_groups[0]["fused"] is True
    ref = _reference_adagrad(params, 4, 0.1, 0.1)
    _run(opt, params, 4)
    for p, r in zip(params, ref):
        torch.testing.assert_close(p.detach(), r, rtol=1e-5, atol=1e-6)
    params = _params()
    start = [p.detach().clone() for p in params]
    _run(build_optimizer(params, "sgd", 0.5), params, 1)
    for p, s, g in zip(params, start, _grads(1, params)):
        torch.testing.assert_close(p.detach(), s - 0.5 * g)


def test_a_parameter_set_without_fused_kernels_gets_the_plain_optimizer():
    params = [torch.nn.Parameter(torch.randn(3, dtype=torch.float64)), torch.nn.Parameter(torch.randn(2))]
    # mixed dtypes are fine for fused Adam on CPU; a non-float parameter set is not trainable at all,
    # so check the fallback with a device/dtype combination PyTorch refuses: complex tensors
    cparams = [torch.nn.Parameter(torch.randn(3, dtype=torch.complex64))]
    assert build_optimizer(cparams, "adam", 0.1).param_groups[0]["fused"] in (None, False)
    assert build_optimizer(params, "adam", 0.1).param_groups[0]["fused"] is True


def test_loading_a_foreach_state_keeps_fused_and_continues_exactly():
    opt_args = argparse.Namespace(learning_rate=0.01, adam_beta1=0.9, adam_beta2=0.999)
    # a checkpoint written by a non-fused Adam (as before fused kernels were used)
    params = _params()
    old = torch.optim.Adam(params, lr=0.01, foreach=True)
    _run(old, params, 3)
    buf = io.BytesIO()
    torch.save(old.state_dict(), buf)  # through a file, as a checkpoint (state_dict() shares tensors)
    buf.seek(0)
    state = torch.load(buf)
    assert state["param_groups"][0]["fused"] in (None, False)
    saved = [p.detach().clone() for p in params]
    # resumed: fused, and the same trajectory as the old optimizer going on
    resumed_params = [torch.nn.Parameter(p.clone()) for p in saved]
    resumed = build_optimizer(resumed_params, "adam", 0.01)
    load_optimizer_state(resumed, state, opt_args)
    assert resumed.param_groups[0]["fused"] is True
    _run(resumed, resumed_params, 3, start=4)
    _run(old, params, 3, start=4)
    for p, r in zip(resumed_params, params):
        torch.testing.assert_close(p.detach(), r.detach(), rtol=1e-5, atol=1e-6)


def test_a_parameter_new_on_resume_gets_adagrads_fresh_accumulator():
    """Adagrad makes its accumulators at construction (PyTorch before 2.13 does not make them again in
    step: KeyError 'sum'); loading a checkpoint without the new parameter must keep its fresh one."""
    opt_args = argparse.Namespace(learning_rate=0.1, adam_beta1=0.9, adam_beta2=0.999)
    old_p = torch.nn.Parameter(torch.randn(3))
    old = build_optimizer([old_p], "adagrad", 0.1, adagrad_accumulator_init=0.5)
    old_p.grad = torch.ones(3)
    old.step()
    state = old.state_dict()
    kept_p, new_p = torch.nn.Parameter(old_p.detach().clone()), torch.nn.Parameter(torch.randn(2))
    resumed = build_optimizer([kept_p, new_p], "adagrad", 0.1, adagrad_accumulator_init=0.5)
    load_optimizer_state(resumed, state, opt_args, ckpt_names=["a"], names=["a", "cov"])
    torch.testing.assert_close(resumed.state[kept_p]["sum"], torch.full((3,), 1.5))   # the checkpoint's
    torch.testing.assert_close(resumed.state[new_p]["sum"], torch.full((2,), 0.5))    # fresh
    assert int(resumed.state[new_p]["step"]) == 0


@pytest.mark.parametrize("name", ["sgd", "adagrad", "adam"])
def test_unknown_and_known_names(name):
    assert build_optimizer(_params(), name, 0.1).param_groups[0]["lr"] == 0.1
    with pytest.raises(ValueError, match="unknown optimizer"):
        build_optimizer(_params(), "adamw", 0.1)

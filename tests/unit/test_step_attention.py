"""onmt/fused/step_attention.py: a pass of fused attention steps, and the blocked mlp score of a fused
GlobalAttention outside a pass, equal the plain GlobalAttention."""
import pytest
import torch

from onmt.fused.step_attention import StepAttention, keys_grad, mlp_scores_blocked, mlp_scores_grads, mlp_scores_values
from onmt.modules.global_attention import GlobalAttention


def _pass(attention, memory, mask, queries, coverage, fused):
    """T attention steps as the decoder makes them (coverage accumulates); returns outputs and align."""
    keys = attention.precompute_keys(memory)
    step = StepAttention(keys, memory) if fused else None
    cov = torch.zeros(mask.shape, dtype=memory.dtype) if coverage else None
    outs, aligns = [], []
    for q in queries.unbind(1):
        out, align, context = attention(q, memory, mask, keys=keys, coverage=cov, step=step)
        outs.append(out + context)
        aligns.append(align)
        cov = cov + align if coverage else None
    return torch.stack(outs, 1), torch.stack(aligns, 1)


@pytest.mark.parametrize("attn_type,coverage", [("mlp", True), ("mlp", False), ("general", True), ("dot", False)])
@pytest.mark.parametrize("block", [None, 2 * 5 * 8])  # one block, and row blocks of 2
def test_fused_pass_equals_the_plain_attention_values_and_gradients(attn_type, coverage, block, monkeypatch):
    if block is not None:
        monkeypatch.setattr("onmt.fused.step_attention.BLOCK", block)
    torch.manual_seed(0)
    B, S, H, T = 5, 7, 8, 4
    attention = GlobalAttention(H, attn_type, coverage=coverage).double()
    if coverage and attn_type != "mlp":
        torch.nn.init.normal_(attention.cover_weight)
    memory = torch.randn(B, S, H, dtype=torch.float64, requires_grad=True)
    queries = torch.randn(B, T, H, dtype=torch.float64, requires_grad=True)
    mask = torch.arange(S)[None, :] < torch.tensor([7, 3, 5, 7, 1])[:, None]
    weights = torch.randn(B, T, H, dtype=torch.float64), torch.randn(B, T, S, dtype=torch.float64)
    results = []
    for fused in (False, True):
        out, align = _pass(attention, memory, mask, queries, coverage, fused)
        loss = (out * weights[0]).sum() + (align * weights[1]).sum()
        params = [memory, queries] + list(attention.parameters())
        results.append((out, align, torch.autograd.grad(loss, params, allow_unused=True)))
    (out_p, align_p, grads_p), (out_f, align_f, grads_f) = results
    assert torch.allclose(out_f, out_p, atol=1e-6) and torch.allclose(align_f, align_p, atol=1e-6)
    for g_f, g_p in zip(grads_f, grads_p):
        assert (g_f is None) == (g_p is None)
        if g_p is not None:
            assert torch.allclose(g_f, g_p, atol=1e-6)
    assert (align_f[~mask.unsqueeze(1).expand_as(align_f)] == 0).all()


def _mlp_reference(keys, q, cov, w_c, v):
    """v . tanh(keys + q [+ cov w_c]) per example and position, under autograd."""
    B, S, _ = keys.shape
    rows = []
    for b in range(B):
        row = []
        for i in range(S):
            x = keys[b, i] + q[b] + (cov[b, i] * w_c if cov is not None else 0)
            row.append(v @ torch.tanh(x))
        rows.append(torch.stack(row))
    return torch.stack(rows)


@pytest.mark.parametrize("coverage", [True, False])
@pytest.mark.parametrize("kept", [True, False])
@pytest.mark.parametrize("block", [None, 2 * 5 * 8])
def test_mlp_scores_by_sigmoids_and_their_gradients_equal_the_tanh_formula(coverage, kept, block, monkeypatch):
    """Scores 2 v . sigmoid(2x) - sum(v) and the gradients written with u = s (1 - s), from kept sigmoids
    or recomputed ones, one block or row blocks, returned or summed into the keys' accumulator."""
    if block is not None:
        monkeypatch.setattr("onmt.fused.step_attention.BLOCK", block)
    torch.manual_seed(1)
    B, S, H = 5, 5, 8
    f64 = dict(dtype=torch.float64)
    keys, q = 2 * torch.randn(B, S, H, **f64), torch.randn(B, H, **f64)
    v, w_c = torch.randn(H, **f64), torch.randn(H, **f64)
    cov = torch.rand(B, S, **f64) if coverage else None
    leaves = [t.clone().requires_grad_() for t in (keys, q, v) + ((cov, w_c) if coverage else ())]
    kk, qq, vv = leaves[:3]
    cc, ww = leaves[3:] if coverage else (None, None)
    grad = torch.randn(B, S, **f64)
    want = _mlp_reference(kk, qq, cc, ww, vv)
    want_grads = torch.autograd.grad((want * grad).sum(), leaves)
    sig = torch.empty(B, S, H, **f64) if kept else None
    got = mlp_scores_values(keys, q, cov, w_c if coverage else None, v, keep=sig)
    assert torch.allclose(got, want.detach(), atol=1e-12)
    d_keys, d_q, d_cov, d_wc, d_v = mlp_scores_grads(grad, keys, q, cov, w_c if coverage else None, v, sig=sig)
    gu = torch.ones(B, S, H, **f64)  # the accumulator adds: start from ones
    none, d_q2, _, _, _ = mlp_scores_grads(grad, keys, q, cov, w_c if coverage else None, v, sig=sig, gu=gu)
    assert none is None and torch.equal(d_q2, d_q)
    assert torch.allclose(keys_grad(gu, v), want_grads[0] + 4 * v, atol=1e-12)
    got_grads = [d_keys, d_q, d_v] + ([d_cov, d_wc] if coverage else [])
    for name, a, b in zip(["keys", "q", "v", "cov", "w_c"], got_grads, want_grads):
        assert torch.allclose(a, b, atol=1e-12), name
    if kept:  # the kept sigmoids are what the scores were made of, and backward leaves them as they were
        x = keys + q.unsqueeze(1) + (cov.unsqueeze(-1) * w_c if coverage else 0)
        assert torch.allclose(sig, torch.sigmoid(2 * x), atol=1e-15)


@pytest.mark.parametrize("coverage", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_blocked_mlp_scores_equal_the_plain_formula(coverage, grad, monkeypatch):
    """mlp_scores_blocked (a fused GlobalAttention's score outside a pass): row blocks, and without
    autograd v . tanh(x) as 2 v . sigmoid(2x) - sum(v): the scores of the plain tanh formula."""
    torch.manual_seed(0)
    plain = GlobalAttention(8, attn_type="mlp", coverage=coverage).double()
    fused = GlobalAttention(8, attn_type="mlp", coverage=coverage, mlp_score=mlp_scores_blocked).double()
    fused.load_state_dict(plain.state_dict())
    query, keys = torch.randn(7, 8, dtype=torch.float64), 3 * torch.randn(7, 5, 8, dtype=torch.float64)
    cov = torch.rand(7, 5, dtype=torch.float64) if coverage else None
    want = plain.score(query, keys, cov)
    assert want.requires_grad
    for block in (None, 2 * 5 * 8):  # one block, and row blocks of 2
        if block is not None:
            monkeypatch.setattr("onmt.fused.step_attention.BLOCK", block)
        with torch.set_grad_enabled(grad):
            got = fused.score(query, keys, cov)
        assert got.requires_grad == grad
        assert torch.allclose(got, want, atol=1e-12)


def test_compiled_mlp_scores_equal_the_plain_formula_at_every_shape():
    """translate -compile's scorer (compiled_mlp_scores): the plain tanh formula's scores without autograd,
    at several batch and source sizes with and without coverage (one dynamic graph each); under autograd
    it is mlp_scores_blocked, gradients and all."""
    from onmt.fused.step_attention import compiled_mlp_scores
    from onmt.hardware import compile_problem
    if compile_problem("cpu"):
        pytest.skip(compile_problem("cpu"))
    torch.manual_seed(0)
    plain = GlobalAttention(16, attn_type="mlp", coverage=True)
    compiled = GlobalAttention(16, attn_type="mlp", coverage=True, mlp_score=compiled_mlp_scores())
    compiled.load_state_dict(plain.state_dict())
    for rows, src_len, coverage in ((6, 5, True), (15, 9, True), (4, 3, False), (10, 12, False)):
        query, keys = torch.randn(rows, 16), 3 * torch.randn(rows, src_len, 16)
        cov = torch.rand(rows, src_len) if coverage else None
        with torch.no_grad():
            want, got = plain.score(query, keys, cov), compiled.score(query, keys, cov)
        assert got.shape == (rows, src_len) and torch.allclose(got, want, atol=1e-5), (rows, src_len, coverage)
    query = torch.randn(3, 16, requires_grad=True)
    keys, cov = torch.randn(3, 4, 16), torch.rand(3, 4)
    got = compiled.score(query, keys, cov)
    assert got.requires_grad
    (g_got,) = torch.autograd.grad(got.sum(), query)
    (g_want,) = torch.autograd.grad(plain.score(query, keys, cov).sum(), query)
    assert torch.allclose(g_got, g_want, atol=1e-6)


def test_decoding_scores_take_bfloat16_inputs_with_float32_parameters():
    """-amp bf16 validation: autocast gives bfloat16 queries and keys while v stays a float32 parameter; the
    sigmoid-form scores run in bfloat16 and match the float32 formula to bfloat16 rounding."""
    g = torch.Generator().manual_seed(4)
    q, keys = torch.randn(6, 8, generator=g), torch.randn(3, 5, 8, generator=g)   # G = 2 queries per source
    v, cov, w_c = torch.randn(8, generator=g), torch.rand(6, 5, generator=g), torch.randn(8, generator=g)
    with torch.no_grad():
        want = mlp_scores_blocked(q, keys, cov, v, w_c)
        got = mlp_scores_blocked(q.bfloat16(), keys.bfloat16(), cov, v, w_c)
    assert got.dtype == torch.bfloat16 and got.shape == want.shape
    assert torch.allclose(got.float(), want, atol=0.1, rtol=0.05)

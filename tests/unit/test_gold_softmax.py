"""gold_log_softmax (onmt/fused/gold_softmax.py): log softmax(o W^T + b)[gold] and the row statistics,
against autograd over the plain log-softmax (Paulus et al. eq. 9, See et al. eq. 4), values and
gradients, in float64, in one or several row blocks."""
import pytest
import torch

from onmt.fused import gold_softmax
from onmt.fused.gold_softmax import gold_log_softmax, linear_in_column_blocks, row_max, training_logits


@pytest.mark.parametrize("block_elements", [None, 2 * 13])
@pytest.mark.parametrize("small_blocks", [False, True])
def test_gold_log_softmax_against_autograd(block_elements, small_blocks, monkeypatch):
    if block_elements:
        monkeypatch.setattr(gold_softmax, "_CPU_CHUNK_ELEMENTS", block_elements)  # blocks of 2 rows
    if small_blocks:  # the product in column blocks of 4 (the last one shorter), the row max over chunks of 3
        monkeypatch.setattr(gold_softmax, "_CPU_PRODUCT_COLUMNS", 4)
        monkeypatch.setattr(gold_softmax, "_MAX_CHUNK", 3)
    torch.manual_seed(0)
    N, D, V, S = 9, 5, 13, 4
    o = torch.randn(N, D, dtype=torch.float64, requires_grad=True)
    w = torch.randn(V, D, dtype=torch.float64, requires_grad=True)
    b = torch.randn(V, dtype=torch.float64, requires_grad=True)
    gold = torch.randint(0, V + 3, (N,))
    gold[0], gold[1] = V + 1, V - 1
    cols = torch.randint(0, V + 3, (N, S))
    z, lse, top, top_id, at_cols = gold_log_softmax(o, w, b, gold, cols, -1e4)
    logits = torch.nn.functional.linear(o, w, b)  # (N, V)
    ext = torch.cat([logits, torch.full((N, 3), -1e4, dtype=logits.dtype)], 1)  # (N, V + 3)
    ref = ext.gather(1, gold[:, None]).squeeze(1) - torch.logsumexp(logits, 1)
    assert torch.allclose(z, ref) and torch.allclose(lse, torch.logsumexp(logits, 1))
    assert torch.equal(top_id, logits.argmax(1)) and torch.allclose(top, logits.amax(1))
    assert torch.allclose(at_cols, ext.gather(1, cols))
    weights = torch.randn(N, dtype=torch.float64)
    got = torch.autograd.grad((z * weights).sum(), (o, w, b))
    want = torch.autograd.grad((ref * weights).sum(), (o, w, b))
    for g, r in zip(got, want):
        assert torch.allclose(g, r)


@pytest.mark.parametrize("V", [2, 17, 128, 300, 1000])
def test_row_max_equals_torch_max_with_ties_infinities_and_a_short_last_chunk(V):
    torch.manual_seed(V)
    x = torch.randn(8, V)
    x[1] = 1.0                                   # every column ties: the first wins
    x[2, [V // 3, V // 2, V - 1]] = 7.0          # ties in different chunks
    x[3, V - 1] = 50.0                           # in the (shorter) last chunk
    x[4, V // 2] = float("inf")
    x[5] = float("-inf")
    x[6, 0] = 3e38
    values, ids = torch.empty(8), torch.empty(8, dtype=torch.long)
    row_max(x, (values, ids))
    want_values, want_ids = torch.max(x, dim=1)
    assert torch.equal(values, want_values) and torch.equal(ids, want_ids)


def test_linear_in_column_blocks_equals_addmm(monkeypatch):
    monkeypatch.setattr(gold_softmax, "_CPU_PRODUCT_COLUMNS", 5)  # blocks of 5 columns, the last of 2
    torch.manual_seed(0)
    o, w, b = torch.randn(7, 6, dtype=torch.float64), torch.randn(17, 6, dtype=torch.float64), torch.randn(17)
    got = linear_in_column_blocks(o, w, b.double())
    assert got.shape == (7, 17) and torch.allclose(got, torch.addmm(b.double(), o, w.t()))


def test_low_precision_products_are_the_plain_formula_on_rounded_operands():
    """product_dtype (-amp): the forward product and the two gradient products take bfloat16 operands
    (o, W, and the float32 gradient of the logits rounded once) and their results are widened; the
    softmax, log-sum-exp and the gradient of the logits in float32. Against autograd over the plain
    log-softmax with exactly those roundings, in float64 (only the products' own summation differs)."""
    bf16 = torch.bfloat16
    torch.manual_seed(0)
    N, D, V, S = 40, 24, 300, 4
    o = torch.randn(N, D, requires_grad=True)
    w = (torch.randn(V, D) * 0.5).requires_grad_()
    b = torch.randn(V, requires_grad=True)
    gold = torch.randint(0, V + 3, (N,))
    cols = torch.randint(0, V + 3, (N, S))
    z, lse, top, top_id, at_cols = gold_log_softmax(o, w, b, gold, cols, -1e4, product_dtype=bf16)
    assert z.dtype == lse.dtype == torch.float32
    o_r, w_r = o.detach().to(bf16).double(), w.detach().to(bf16).double()   # the rounded operands
    logits = (o_r @ w_r.t()).to(bf16).double() + b.detach().double()       # (N, V) a bfloat16 product
    ext = torch.cat([logits, torch.full((N, 3), -1e4, dtype=logits.dtype)], 1)  # (N, V + 3)
    ref = ext.gather(1, gold[:, None]).squeeze(1) - torch.logsumexp(logits, 1)
    torch.testing.assert_close(z.double(), ref, rtol=0, atol=2e-2)           # one bfloat16 ulp of a logit
    torch.testing.assert_close(lse.double(), torch.logsumexp(logits, 1), rtol=0, atol=2e-2)
    full32 = gold_log_softmax(o.detach(), w.detach(), b.detach(), gold, cols, -1e4)[0]
    assert (z.detach() - full32).abs().max() > 1e-4                          # really not float32 products
    weights = torch.randn(N)
    g_o, g_w, g_b = torch.autograd.grad((z * weights).sum(), (o, w, b))
    assert g_o.dtype == g_w.dtype == g_b.dtype == torch.float32
    logits_r = logits.clone().requires_grad_()
    ext_r = torch.cat([logits_r, torch.full((N, 3), -1e4, dtype=logits.dtype)], 1)
    ref_r = ext_r.gather(1, gold[:, None]).squeeze(1) - torch.logsumexp(logits_r, 1)
    grad_logits, = torch.autograd.grad((ref_r * weights.double()).sum(), logits_r)  # (N, V)
    g_r = grad_logits.float().to(bf16).double()                              # rounded once, as the kernel does
    torch.testing.assert_close(g_b.double(), grad_logits.sum(0), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(g_o.double(), g_r @ w_r, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(g_w.double(), g_r.t() @ o_r, rtol=1e-2, atol=1e-2)
    o32, w32 = o.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    z32 = gold_log_softmax(o32, w32, b.detach(), gold, cols, -1e4)[0]
    for got, g32 in zip((g_o, g_w), torch.autograd.grad((z32 * weights).sum(), (o32, w32))):
        assert (got - g32).abs().max() > 1e-4 * g32.abs().max()              # the backward products are low too


@pytest.mark.parametrize("rows", [1, 1023, 1024, 1500])
def test_training_logits_equal_the_float64_product_packed_or_in_blocks(rows):
    """From _PACK_ROWS rows (1024) the one product of a pass runs on W packed for oneDNN, below in column
    blocks: both the plain product, to float32 rounding."""
    torch.manual_seed(rows)
    o, w, b = torch.randn(rows, 24), torch.randn(2100, 24) * 0.3, torch.randn(2100)
    got = training_logits(o, w, b)
    want = torch.addmm(b.double(), o.double(), w.double().t())
    assert got.shape == (rows, 2100) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


def test_gold_log_softmax_of_many_rows_takes_the_packed_product(monkeypatch):
    """A pass of >= _PACK_ROWS rows computes its logits with one packed product (the same values)."""
    from onmt.fused import packed_linear
    built = []
    original = packed_linear.PackedLinear.__init__
    monkeypatch.setattr(packed_linear.PackedLinear, "__init__",
                        lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    torch.manual_seed(0)
    N, D, V = 1100, 8, 50
    o, w, b = torch.randn(N, D), torch.randn(V, D), torch.randn(V)
    gold, cols = torch.randint(0, V, (N,)), torch.randint(0, V, (N, 3))
    z = gold_log_softmax(o, w, b, gold, cols, -1e4)[0]
    ref = torch.log_softmax(torch.addmm(b, o, w.t()).double(), 1).gather(1, gold[:, None]).squeeze(1)
    assert built and torch.allclose(z.double(), ref, atol=1e-5)


@pytest.mark.parametrize("onednn", [True, False])
def test_float32_gradients_equal_the_float64_ones_to_float32_rounding(onednn, monkeypatch):
    """In float32 the gradients of o and W come from gradient_product (oneDNN's inner product on the
    CPU, or plain matmul): both equal float64 autograd's to float32 rounding."""
    monkeypatch.setattr(gold_softmax, "ONEDNN_GRADIENTS", onednn)
    g = torch.Generator().manual_seed(1)
    N, D, V = 37, 24, 700
    o64, w64, b64 = torch.randn(N, D, generator=g), torch.randn(V, D, generator=g) * 0.3, torch.randn(V, generator=g)
    gold, cols = torch.randint(0, V, (N,), generator=g), torch.randint(0, V, (N, 3), generator=g)
    weights = torch.randn(N, generator=g)
    grads = []
    for dtype in (torch.float32, torch.float64):
        o, w, b = (t.to(dtype).requires_grad_() for t in (o64, w64, b64))
        z = gold_log_softmax(o, w, b, gold, cols, -1e4)[0]
        grads.append(torch.autograd.grad((z * weights.to(dtype)).sum(), (o, w)))
    for got, want in zip(*grads):
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)


def test_gradient_product_is_the_product_of_the_views():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(30, 50, generator=g), torch.randn(50, 20, generator=g)   # a @ b
    want = a.double() @ b.double()
    torch.testing.assert_close(gold_softmax.gradient_product(a, b.t()).double(), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gold_softmax.gradient_product(a.t().contiguous().t(), b.t().contiguous()).double(),
                               want, rtol=1e-5, atol=1e-5)

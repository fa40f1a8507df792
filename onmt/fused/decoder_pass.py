"""See et al.'s decoder over a whole teacher-forced pass as ONE autograd function, backward by hand.

The decoder of the pointer-generator (onmt/models/rnn_decoder.py with a one-layer LSTM, input
feeding and mlp attention, with or without coverage) runs T steps of small operations: at See et
al.'s Gigaword sizes (batch 32, hidden 256, source ~30) each step's forward and backward under
autograd issue some 300 operator calls of a few microseconds of work each, so recording and
replaying the graph costs as much as the arithmetic. Here the forward pass runs the same equations
without autograd into preallocated (T, B, ...) buffers, and the backward pass walks the steps in
reverse with the gradients written out below; what does not depend on the step order is done once
per pass:

    the embedding part of the LSTM gates,
        x_t W_ih[:, :E]^T for all t                                 one (T*B, E) x (E, 4H) product
    the weight gradients of W_ih, W_hh, b, W_q, W_out, b_out        one product each over T*B rows
    the gradient of the embeddings and of the encoder states        one product each
    the keys' gradient                                              added in place, step by step

Per step t (gates i, f, g, o in PyTorch's order; d = gradient):
    z = [E_t ; feed_t] W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh     c_t = s(f) c_{t-1} + s(i) tanh(g)
    h_t = s(o) tanh(c_t)     q = W_q h_t     e_i = v . tanh(k_i + q + cov_i w_c)    (See eqs. 1, 11)
    a = masked softmax(e)    ctx = sum_i a_i m_i    y = tanh(W_out [ctx ; h_t] + b_out) (eqs. 2, 3)
    out_t = y * dropout mask      feed_{t+1} = out_t      cov_{t+1} = cov_t + a         (eq. 10)
Backward, from d out_t (+ d feed_{t+1}), d h_t, d ctx_t, d a_t, d cov_t of the outputs and the
carried d h, d c, d cov: dy = d out * mask; dp = dy (1 - y^2); d[ctx ; h] = dp W_out;
d a += M d ctx + d cov; de = a (d a - <d a, a>); the mlp score gradients
(step_attention.mlp_scores_grads, from the sigmoids kept in forward, or recomputed when a long pass
would make them too large: KEEP_SIGMOIDS);
d h += dq W_q; d c = d c_next + d h s(o) (1 - tanh^2 c); gate gradients through s' and tanh';
d [feed ; h_{t-1}] = dz [W_ih[:, E:] ; W_hh].

The plain step loop (RNNDecoder.step under autograd) is the reference:
tests/unit/test_decoder_pass.py compares values and every gradient, with coverage and without, with
padding and a dropout mask.
"""
import torch

from onmt.fused.step_attention import keys_grad, mlp_scores_grads, mlp_scores_values
from onmt.modules.masked_softmax import masked_softmax

# the attention's sigmoids of every step are kept for backward while they take at most this many
# elements (T*B*S*H; 128 MB of float32: Gigaword-size passes keep them, ~11 MB at batch 32), else
# recomputed step by step in backward (CNN/DM-size passes would keep 650 MB)
KEEP_SIGMOIDS = 1 << 25


def _tb(x):
    """(B, T, ...) -> a contiguous (T, B, ...) copy."""
    return x.transpose(0, 1).contiguous()


def _bt(x):
    """(T, B, ...) -> a new contiguous (B, T, ...) tensor (never a view of the pass's buffers)."""
    return x.transpose(0, 1).clone(memory_format=torch.contiguous_format)


class _DecoderPass(torch.autograd.Function):

    @staticmethod
    def forward(ctx, emb, h0, c0, feed0, cov0, keys, memory, mask, drop,
                w_ih, w_hh, b_ih, b_hh, w_q, v, w_c, w_o, b_o):
        B, T, E = emb.shape
        H, S = h0.size(1), keys.size(1)
        emb_tb = _tb(emb).view(T * B, E)  # (T*B, E) step-major
        w_rec = torch.cat([w_ih[:, E:], w_hh], dim=1)  # (4H, 2H) acting on [feed ; h]
        gates_in = torch.addmm(b_ih + b_hh, emb_tb, w_ih[:, :E].t()).view(T, B, 4 * H)  # (T, B, 4H)
        xh = emb.new_empty(T + 1, B, 2 * H)  # (T+1, B, 2H) [feed_t ; h_{t-1}]; row T: [out_T ; h_T]
        xh[0, :, :H], xh[0, :, H:] = feed0, h0
        act = emb.new_empty(T, B, 4 * H)  # (T, B, 4H) s(i), s(f), tanh(g), s(o)
        cs = emb.new_empty(T + 1, B, H)  # (T+1, B, H) c_0 .. c_T
        cs[0] = c0
        tcs = emb.new_empty(T, B, H)  # (T, B, H) tanh(c_t)
        ch = emb.new_empty(T, B, 2 * H)  # (T, B, 2H) [ctx_t ; h_t]
        qs = emb.new_empty(T, B, H)  # (T, B, H) W_q h_t
        ys = emb.new_empty(T, B, H)  # (T, B, H) y before dropout
        attn = emb.new_empty(T, B, S)  # (T, B, S)
        sigs = None
        if T * B * S * H <= KEEP_SIGMOIDS:
            sigs = emb.new_empty(T, B, S, H)  # (T, B, S, H) the attention's sigmoids, for backward
        covs = None
        if cov0 is not None:
            covs = emb.new_empty(T + 1, B, S)  # (T+1, B, S) cov_0 .. cov_T
            covs[0] = cov0
        for t in range(T):
            z = torch.addmm(gates_in[t], xh[t], w_rec.t())  # (B, 4H)
            a_t = act[t]
            torch.sigmoid(z, out=a_t)
            torch.tanh(z[:, 2 * H:3 * H], out=a_t[:, 2 * H:3 * H])
            i, f, g, o = a_t.chunk(4, dim=1)  # (B, H) each
            c = torch.mul(f, cs[t], out=cs[t + 1]).addcmul_(i, g)  # (B, H)
            h = torch.mul(o, torch.tanh(c, out=tcs[t]), out=ch[t, :, H:])  # (B, H)
            q = torch.mm(h, w_q.t(), out=qs[t])  # (B, H)
            e = mlp_scores_values(keys, q, None if covs is None else covs[t], w_c, v,
                                  keep=None if sigs is None else sigs[t])  # (B, S)
            attn[t] = masked_softmax(e, mask)  # (B, S)
            a = attn[t]
            ch[t, :, :H] = torch.bmm(a.unsqueeze(1), memory).squeeze(1)  # (B, H) context
            y = torch.tanh(torch.addmm(b_o, ch[t], w_o.t()), out=ys[t])  # (B, H)
            if drop is None:
                xh[t + 1, :, :H] = y
            else:
                torch.mul(y, drop[t], out=xh[t + 1, :, :H])
            xh[t + 1, :, H:] = h
            if covs is not None:
                torch.add(covs[t], a, out=covs[t + 1])
        ctx.save_for_backward(emb_tb, keys, memory, drop, w_ih, w_rec, w_q, v, w_c, w_o,
                              xh, act, cs, tcs, ch, qs, ys, attn, covs, sigs)
        ctx.dims = (B, T, E, H)
        outputs = (_bt(xh[1:, :, :H]), _bt(ch[:, :, H:]), _bt(ch[:, :, :H]), _bt(attn),
                   None if covs is None else _bt(covs[:T]), xh[T, :, H:].clone(), cs[T].clone(),
                   None if covs is None else covs[T].clone())
        return outputs

    @staticmethod
    def backward(ctx, d_out, d_rnn, d_ctx, d_attn, d_cov, d_hT, d_cT, d_covT):
        (emb_tb, keys, memory, drop, w_ih, w_rec, w_q, v, w_c, w_o,
         xh, act, cs, tcs, ch, qs, ys, attn, covs, sigs) = ctx.saved_tensors
        B, T, E, H = ctx.dims
        d_out, d_rnn, d_ctx, d_attn = _tb(d_out), _tb(d_rnn), _tb(d_ctx), _tb(d_attn)  # (T, B, ...)
        coverage = covs is not None
        if coverage:
            d_cov = _tb(d_cov)  # (T, B, S)
            dcov = d_covT.clone()  # (B, S) gradient of cov_{t+1}
        gu = torch.zeros_like(keys)  # (B, S, H) sum_t g_t u_t: the keys' gradient over 4 v
        # (B, H, S): (1 x H)(H x S) products are the fast form
        memory_t = memory.transpose(1, 2).contiguous()
        d_v = torch.zeros_like(v)  # (H,)
        d_wc = torch.zeros_like(w_c) if coverage else None
        dz = xh.new_empty(T, B, 4 * H)  # (T, B, 4H) gate pre-activation gradients
        dp = xh.new_empty(T, B, H)  # (T, B, H) gradient of W_out [ctx ; h] + b_out
        dq = xh.new_empty(T, B, H)  # (T, B, H)
        dctx = xh.new_empty(T, B, H)  # (T, B, H)
        dh, dc = d_hT.clone(), d_cT.clone()  # (B, H) x2, from the future
        dfeed = torch.zeros_like(dh)  # (B, H) gradient of out_t through feed_{t+1}
        for t in reversed(range(T)):
            dy = d_out[t] + dfeed  # (B, H)
            if drop is not None:
                dy.mul_(drop[t])
            torch.ops.aten.tanh_backward(dy, ys[t], grad_input=dp[t])
            dch = torch.mm(dp[t], w_o)  # (B, 2H)
            torch.add(dch[:, :H], d_ctx[t], out=dctx[t])
            dh += dch[:, H:]
            dh += d_rnn[t]
            # (B, S) M d ctx
            da = torch.bmm(dctx[t].unsqueeze(1), memory_t).squeeze(1).add_(d_attn[t])
            if coverage:
                da += dcov
            a = attn[t]
            de = a * (da - (da * a).sum(1, keepdim=True))  # (B, S) softmax backward; 0 where a = 0
            _, d_q, d_cov_s, _, _ = mlp_scores_grads(de, keys, qs[t], covs[t] if coverage else None,
                                                     w_c, v, sig=None if sigs is None else sigs[t],
                                                     gu=gu, d_v=d_v, d_wc=d_wc)
            dq[t] = d_q
            if coverage:
                dcov = dcov + d_cov[t] + d_cov_s  # gradient of cov_t
            dh.addmm_(d_q, w_q)
            i, f, g, o = act[t].chunk(4, dim=1)  # (B, H) each
            tc = tcs[t]
            dc = torch.ops.aten.tanh_backward(dh * o, tc).add_(dc)  # (B, H) gradient of c_t
            # (B, 4H) of s(i), s(f), tanh(g), s(o)
            d_act = torch.cat([dc * g, dc * cs[t], dc * i, dh * tc], dim=1)
            torch.ops.aten.sigmoid_backward(d_act, act[t], grad_input=dz[t])
            dz[t, :, 2 * H:3 * H] = torch.ops.aten.tanh_backward(d_act[:, 2 * H:3 * H], g)
            dc = dc * f  # gradient of c_{t-1}
            dxh = torch.mm(dz[t], w_rec)  # (B, 2H)
            dfeed, dh = dxh[:, :H], dxh[:, H:].contiguous()
        dz2 = dz.view(T * B, 4 * H)  # (T*B, 4H)
        d_emb = torch.mm(dz2, w_ih[:, :E]).view(T, B, E).transpose(0, 1)  # (B, T, E)
        d_rec = torch.mm(dz2.t(), xh[:T].reshape(T * B, 2 * H))  # (4H, 2H)
        d_w_ih = torch.cat([torch.mm(dz2.t(), emb_tb), d_rec[:, :H]], dim=1)  # (4H, E + H)
        d_w_hh = d_rec[:, H:].contiguous()  # (4H, H)
        d_b = dz2.sum(0)  # (4H,)
        d_w_q = torch.mm(dq.view(T * B, H).t(), ch[:, :, H:].reshape(T * B, H))  # (H, H)
        d_w_o = torch.mm(dp.view(T * B, H).t(), ch.view(T * B, 2 * H))  # (H, 2H)
        d_b_o = dp.view(T * B, H).sum(0)  # (H,)
        # (B, S, H) sum_t a_t dctx_t^T
        d_memory = torch.bmm(attn.permute(1, 2, 0), dctx.transpose(0, 1))
        return (d_emb, dh, dc, dfeed.contiguous(), dcov if coverage else None, keys_grad(gu, v),
                d_memory, None, None,
                d_w_ih, d_w_hh, d_b, d_b.clone(), d_w_q, d_v, d_wc, d_w_o, d_b_o)


def lstm_mlp_decoder_pass(emb, h0, c0, feed0, cov0, keys, memory, mask, drop, rnn, attention):
    """T teacher-forced steps of the input-feeding LSTM decoder with mlp attention.

    emb (B, T, E) decoder inputs (after their dropout); h0, c0 (B, H) the LSTM state; feed0 (B, H)
    the first input feed; cov0 (B, S) the coverage (None without coverage); keys (B, S, H) the
    attention keys W_m m; memory (B, S, H) the encoder states; mask (B, S) True at real positions;
    drop (T, B, H) the dropout mask (scaled) of the attentional vectors, or None; rnn a one-layer
    nn.LSTM; attention the GlobalAttention (mlp). Returns out, rnn_out, context (B, T, H),
    attn (B, T, S), coverage before each step (B, T, S) or None, and the final h, c (B, H) and
    coverage (B, S) or None.
    """
    w_c = attention.linear_cover.weight.view(-1) if cov0 is not None else None  # (H,)
    return _DecoderPass.apply(emb, h0, c0, feed0, cov0, keys, memory, mask, drop,
                              rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0,
                              attention.linear_query.weight, attention.v.weight.view(-1), w_c,
                              attention.linear_out.weight, attention.linear_out.bias)

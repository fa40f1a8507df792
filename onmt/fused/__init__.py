"""The speed-ups: fused kernels that compute what a plain formula computes, faster or in less
memory.

The equations live in plain, equation-shaped code: Paulus et al. 2017 eqs. 2-8 in
onmt/reinforced/intra_attention.py, o_t = [h^d_t ; c^e_t ; c^d_t] in onmt/reinforced/decoder.py,
eqs. 9-13 in onmt/reinforced/pointer_generator.py; See et al. 2017's attention (eqs. 1-3, 11) in
onmt/modules/global_attention.py, p_gen and the mixture (eqs. 4, 8, 9) in
onmt/modules/copy_generator.py and copy_mixture.py. That plain code is the reference: each kernel
here is tested against it (values and gradients), and a whole model runs it alone when built with
kernels "plain" (onmt/execution.py: the one implementation selector, Execution(kernels, precision,
compile, capture), fixed at construction and logged by build_model with the class and the fused
paths that do not apply, and the one place that says where a fused kernel can run now, the
toolkit's only grad-mode check included). The kernels take tensors and know no model class; the
families' fused subclasses (onmt/reinforced/fused.py, onmt/models/fused.py), which the registry
builds for kernels "fused", call them. Nothing in onmt/modules, onmt/models or onmt/reinforced's
plain classes imports this package: the fused subclasses give the modules they build the fused
versions (the mlp score, the copy generator's decoding mixture, the dropout class) and call the
others themselves. tests/e2e/test_plain_vs_fused.py
compares a whole ML step, a whole mixed step (values and every gradient) and a whole beam search of
each family, plain against fused.

Each entry: the formula (equation number), the plain reference code, the fused function, the test:

Paulus (2), (5): e_ti = h^d_t . W^e h^e_i and c^e_t = sum_i a^e_ti h^e_i, at every step
    plain  IntraTemporalAttention.forward(..., source=None)
           onmt/reinforced/intra_attention.py
    fused  step_source.StepSource: both products in the fast layout, the steps' gradients summed in
           one bmm
    test   tests/unit/test_step_source.py
           ::test_temporal_attention_with_step_source_equals_the_plain_attention
See (1)-(3), (11): e_i = v . tanh(W_m m_i + W_q h + w_c cov_i), a = softmax(e), c = sum_i a_i m_i,
           at every step
    plain  GlobalAttention.forward(..., step=None)
           onmt/modules/global_attention.py
    fused  step_attention.StepAttention: the tanh recomputed in backward
           (nothing (B, S, H) kept per step),
           never formed: v . tanh(x) = 2 v . sigmoid(2x) - sum(v); the context through StepSource
    test   tests/unit/test_step_attention.py
           ::test_fused_pass_equals_the_plain_attention_values_and_gradients
See (1)-(3), (10)-(11) with the LSTM cell and input feeding: the whole teacher-forced decoder pass
    plain  RNNDecoder.step under autograd, T times
           onmt/models/rnn_decoder.py
    fused  decoder_pass.lstm_mlp_decoder_pass: one autograd function,
           backward written out step by step
           (the attention's sigmoids kept for it up to KEEP_SIGMOIDS elements),
           the weight gradients and the embedding part of the gates as one product per pass
    test   tests/unit/test_decoder_pass.py
           ::test_fused_pass_equals_the_step_loop_values_and_gradients
The LSTM cell's gates at a decoding step (every decoder), without autograd,
           the decoding precision set
    plain  lstm_step: x W_ih^T + b_ih + h W_hh^T + b_hh per layer
           onmt/modules/lstm_step.py
    fused  low_precision.decoding_gates: [x ; h] [W_ih ; W_hh]^T prepared once
           (fp32 packed, bf16, int8),
           the g rows doubled so that the cell's tanh(g) and tanh(c) come from sigmoids
           (DecodingLSTMLayer)
    test   tests/unit/test_low_precision.py::test_decoding_gates_are_one_prepared_product_per_layer,
           tests/unit/test_low_precision.py
           ::test_a_prepared_lstm_layer_is_the_cell_with_tanh_from_sigmoids
The encoder's RNN at -precision bf16 / int8, without autograd
    plain  nn.LSTM / nn.GRU in float32
           onmt/models/rnn_encoder.py
    fused  low_precision.run_rnn (encoder_lowered): bfloat16 autocast,
           or quantize_dynamic's int8 module
    test   tests/unit/test_low_precision.py::test_int8_encoder_is_quantize_dynamics_rnn_built_once,
           tests/unit/test_rnn_encoder.py
           ::test_bf16_decoding_runs_the_rnn_in_bfloat16_and_returns_float32
Paulus (2), (5) at a decoding step, without autograd
    plain  IntraTemporalAttention.forward(..., source=None)
           onmt/reinforced/intra_attention.py
    fused  step_source.DecodingSource: K q as (1 x H)(H x S) products on a transposed view; a beam's
           K rows of one example as one (K x H)(H x S) product reading the source once
           (interface.grouped)
    test   tests/unit/test_step_source.py::test_decoding_source_equals_the_plain_products,
           tests/unit/test_step_source.py
           ::test_grouped_decoding_source_reads_each_source_once_with_the_same_values
Dropout (embeddings, the attentional vector, the reinforced decoder's input)
    plain  nn.Dropout (bernoulli_ masks)
    fused  dropout.Dropout, dropout_mask: masks from torch.rand, the same distribution
           (not the same draws)
    test   tests/unit/test_dropout.py::test_the_mask_drops_with_probability_p_and_scales_the_rest
exp(x - max) where the weights only feed a sum or a draw (PointerGenerator.draw, gold_softmax)
    plain  torch.exp(x - max)
    fused  fast_exp.exp_shifted_: exp2((x - max) log2 e) in place
    test   tests/unit/test_fast_exp.py::test_exp_shifted_is_exp_of_the_shifted_values_in_place
The decoder input E_tgt[y_{t-1}], at every step
    plain  PartialEmbedding.forward (F.embedding)
           onmt/modules/partial_embedding.py
    fused  step_embedding.StepEmbedding: one index_add into the matrix's gradient per pass
    test   tests/unit/test_step_embedding.py
           ::test_decoder_steps_with_step_embedding_equal_the_plain_embedding
Paulus (9), See (4): W_out o_t + b_out without gradient
           (scheduled sampling, rollouts, decoding steps)
    plain  F.linear / torch.addmm
    fused  packed_linear.PackedLinear: W_out packed once for oneDNN, for many products (kept per
           weight version by cached_while_unchanged)
    test   tests/unit/test_packed_linear.py::test_packed_product_equals_the_float64_product,
           tests/unit/test_seq2seq.py
           ::test_decoding_packs_the_generator_weight_once_and_follows_its_updates
    lower  low_precision.prepared_linear (-precision bf16 | fp16 | int8, decoding only): W cast or
           int8-quantized once, float32 out
    test   tests/unit/test_low_precision.py
           ::test_products_are_float32_and_close_to_the_float32_product,
           tests/e2e/test_precision.py::test_low_precision_keeps_clear_predictions
Paulus (13): W_out = tanh(E_tgt W_proj), once per training pass (float32 on the CPU)
    plain  torch.tanh(E_tgt @ W_proj) in PointerGenerator.out_weight
           onmt/reinforced/pointer_generator.py
    fused  tied_weight.tanh_product: oneDNN's product with the tanh as its post-op;
           backward written out
    test   tests/unit/test_tied_weight.py::test_tanh_product_values_and_gradients_equal_the_formula
Paulus (9), See (4) and (6): log softmax(o W^T + b)[y*]
    plain  log_softmax(F.linear(o, W, b)).gather(1, y*)
    fused  gold_softmax.gold_log_softmax (and logit_stats): one (N, V) buffer for forward and
           backward, the gradient products on the CPU by oneDNN's inner product
           (gradient_product: faster than sgemm here)
    test   tests/unit/test_gold_softmax.py::test_gold_log_softmax_against_autograd,
           tests/unit/test_gold_softmax.py
           ::test_float32_gradients_equal_the_float64_ones_to_float32_rounding
Paulus (9)-(13): log p(y*) of the mixture
    plain  PointerGenerator.forward(...).gather(1, y*)
           onmt/reinforced/pointer_generator.py
    fused  FusedPointerGenerator.gold_log_prob (onmt/reinforced/fused.py) on
           gold_mixture.gold_mixture: no (N, X) distribution
    test   tests/unit/test_gold_mixture.py
           ::test_fused_matches_full_distribution_values_and_gradients
Paulus (12): argmax_y p(y)
    plain  PointerGenerator.forward(...).argmax(1)
           onmt/reinforced/pointer_generator.py
    fused  FusedPointerGenerator.predict on gold_mixture.predict_from_logits (mixture_argmax), with
           packed_weight
    test   tests/unit/test_gold_mixture.py
           ::test_predict_with_packed_weights_is_the_argmax_of_the_full_mixture
Paulus (9)-(12): log p(y) over the extended vocabulary at one decoding step,
           without autograd (beam search)
    plain  PointerGenerator.forward(...)
           onmt/reinforced/pointer_generator.py
    fused  FusedPointerGenerator.step_log_probs: packed W_out, step_mixture's softmax in
           cache-sized row blocks and in-place mixture
    test   tests/unit/test_step_mixture.py::test_step_log_probs_equal_the_plain_generator
Paulus (9)-(12): a beam step's top K (and bans, best token) of log p,
           without autograd (beam / greedy search)
    plain  decode_step's log p (R, X) as modules/step_scores.DenseScores
           onmt/modules/step_scores.py
    fused  mixture_scores.MixtureScores (FusedPointerGenerator.step_scores, and See (9):
           onmt/models/fused.py copy_step_scores): the logits as the product wrote them, one
           log-softmax pass for the normalizer, the mixture on the source words apart;
           no (R, X) written
    test   tests/unit/test_mixture_scores.py
           ::test_beam_topk_and_best_equal_the_ranking_of_every_candidate
Paulus (12), See (9): the generation log-probabilities and the mixture without autograd
           (any generator)
    plain  copy_mixture.generation_log_probs, copy_mixture.scatter_mixture
           onmt/modules/copy_mixture.py
    fused  step_mixture.generation_log_probs (cache-sized row blocks),
           step_mixture.scatter_mixture (in place)
    test   tests/unit/test_step_mixture.py::test_decoding_mixture_equals_the_plain_mixture,
           tests/unit/test_properties.py
           ::test_generation_log_probs_decoding_path_equals_training_path
See (9) and (6): log P(w*) of the mixture
    plain  CopyGenerator.forward(...).gather(-1, w*)
           onmt/modules/copy_generator.py
    fused  onmt/models/fused.py copy_gold_log_prob (gold_mixture.gold_mixture)
    test   tests/unit/test_gold_mixture.py
           ::test_copy_generator_fused_gold_path_equals_full_distribution

The per-step-generator baselines the model's teacher forcing is measured against (the generator
called at every step on every row, W_out recomputed at every step or once per pass) are
bench/lib/per_step.py's `per_step_forward` (timed by bench/reinforced_step_bench.py), which
tests/unit/test_reinforced_model.py also compares the model against.
"""

"""The speed-ups: fused kernels that compute what a plain formula computes, faster or in less memory.

The equations live in plain, equation-shaped code: Paulus et al. 2017 eqs. 2-8 in
onmt/reinforced/intra_attention.py, o_t = [h^d_t ; c^e_t ; c^d_t] in onmt/reinforced/decoder.py,
eqs. 9-13 in onmt/reinforced/pointer_generator.py; See et al. 2017's attention (eqs. 1-3, 11) in
onmt/modules/global_attention.py, p_gen and the mixture (eqs. 4, 8, 9) in onmt/modules/copy_generator.py
and copy_mixture.py. That plain code is the reference: each kernel here is tested against it (values
and gradients), and every model can run without the kernels (decode_step under autograd does).
Nothing in onmt/modules imports this package; the models choose the fused paths.

Each entry: the formula (equation number), the plain reference code, the fused function, the test:

Paulus (2), (5): e_ti = h^d_t . W^e h^e_i and c^e_t = sum_i a^e_ti h^e_i, at every step
    plain  IntraTemporalAttention.forward(..., source=None)                  onmt/reinforced/intra_attention.py
    fused  step_source.StepSource: both products in the fast layout, the steps' gradients summed in one bmm
    test   tests/unit/test_step_source.py::test_temporal_attention_with_step_source_equals_the_plain_attention
See (1)-(3), (11): e_i = v . tanh(W_m m_i + W_q h + w_c cov_i), a = softmax(e), c = sum_i a_i m_i, at every step
    plain  GlobalAttention.forward(..., step=None)                          onmt/modules/global_attention.py
    fused  step_attention.StepAttention: the tanh recomputed in backward (nothing (B, S, H) kept per step),
           never formed: v . tanh(x) = 2 v . sigmoid(2x) - sum(v); the context through StepSource
    test   tests/unit/test_step_attention.py::test_fused_pass_equals_the_plain_attention_values_and_gradients
See (1)-(3), (10)-(11) with the LSTM cell and input feeding: the whole teacher-forced decoder pass
    plain  RNNDecoder.step under autograd, T times                          onmt/models/rnn_decoder.py
    fused  decoder_pass.lstm_mlp_decoder_pass: one autograd function, backward written out step by step
           (the attention's sigmoids kept for it up to KEEP_SIGMOIDS elements),
           the weight gradients and the embedding part of the gates as one product per pass
    test   tests/unit/test_decoder_pass.py::test_fused_pass_equals_the_step_loop_values_and_gradients
The decoder input E_tgt[y_{t-1}], at every step
    plain  PartialEmbedding.forward (F.embedding)                            onmt/modules/partial_embedding.py
    fused  step_embedding.StepEmbedding: one index_add into the matrix's gradient per pass
    test   tests/unit/test_step_embedding.py::test_decoder_steps_with_step_embedding_equal_the_plain_embedding
Paulus (9), See (4): W_out o_t + b_out without gradient (scheduled sampling, rollouts, decoding steps)
    plain  F.linear / torch.addmm
    fused  packed_linear.PackedLinear: W_out packed once for oneDNN, for many products (kept per
           weight version by cached_while_unchanged)
    test   tests/unit/test_packed_linear.py::test_packed_product_equals_the_float64_product,
           tests/unit/test_seq2seq.py::test_decoding_packs_the_generator_weight_once_and_follows_its_updates
    lower  low_precision.prepared_linear (-precision bf16 | fp16 | int8, decoding only): W cast or
           int8-quantized once, float32 out
    test   tests/unit/test_low_precision.py::test_products_are_float32_and_close_to_the_float32_product,
           tests/e2e/test_precision.py::test_low_precision_keeps_clear_predictions
Paulus (9), See (4) and (6): log softmax(o W^T + b)[y*]
    plain  log_softmax(F.linear(o, W, b)).gather(1, y*)
    fused  gold_softmax.gold_log_softmax (and logit_stats): one (N, V) buffer for forward and backward
    test   tests/unit/test_gold_softmax.py::test_gold_log_softmax_against_autograd
Paulus (9)-(13): log p(y*) of the mixture
    plain  PointerGenerator.forward(...).gather(1, y*)                       onmt/reinforced/pointer_generator.py
    fused  gold_mixture.pointer_generator_gold_log_prob (gold_mixture): no (N, X) distribution
    test   tests/unit/test_gold_mixture.py::test_fused_matches_full_distribution_values_and_gradients
Paulus (12): argmax_y p(y)
    plain  PointerGenerator.forward(...).argmax(1)                           onmt/reinforced/pointer_generator.py
    fused  gold_mixture.pointer_generator_predict (mixture_argmax), with packed_out_weight
    test   tests/unit/test_gold_mixture.py::test_predict_with_packed_weights_is_the_argmax_of_the_full_mixture
Paulus (9)-(12): log p(y) over the extended vocabulary at one decoding step, without autograd (beam search)
    plain  PointerGenerator.forward(...)                                     onmt/reinforced/pointer_generator.py
    fused  step_mixture.pointer_generator_step_log_probs: packed W_out, softmax in cache-sized row blocks
    test   tests/unit/test_step_mixture.py::test_step_log_probs_equal_the_plain_generator
See (9) and (6): log P(w*) of the mixture
    plain  CopyGenerator.forward(...).gather(-1, w*)                         onmt/modules/copy_generator.py
    fused  gold_mixture.copy_generator_gold_log_prob (gold_mixture)
    test   tests/unit/test_gold_mixture.py::test_copy_generator_fused_gold_path_equals_full_distribution

Two decoding-only layouts stay in the plain file onmt/modules/copy_mixture.py, because the plain
CopyGenerator is also the decoding path (and onmt/modules cannot import this package):
`generation_log_probs` without autograd writes its output in cache-sized row blocks
(tests/unit/test_copy_generator.py::test_decoding_path_equals_autograd_path), and `scatter_mixture`
without autograd writes in place. The per-step-generator baselines the model's teacher forcing is
measured against (the generator called at every step on every row, W_out recomputed at every step or
once per pass) are bench/reinforced_step_bench.py's `per_step_forward`, which
tests/unit/test_reinforced_model.py also compares the model against.
"""

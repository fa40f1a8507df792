"""OpenNMT-py's options that are not options here: what each is here, or why there is none (the
one-line message of onmt/opts/parse.py's unknown_option_message, and docs/upstream.md's table)."""

# Upstream OpenNMT-py options a user may bring: -> (this project's option, or None when there is no
# counterpart, and a few words on it). Used only to explain an unknown option.
UPSTREAM_OPTIONS = {
    "enc_hid_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "dec_hid_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "enc_rnn_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "dec_rnn_size": ("-rnn_size", "the hidden size (encoder = decoder size here)"),
    "src_word_vec_size": ("-word_vec_size", "one size for both sides"),
    "tgt_word_vec_size": ("-word_vec_size", "one size for both sides"),
    "gpuid": ("-gpu", "the GPU id, -1 for the CPU"),
    "max_shard_size": ("-shard_size", "counted in examples"),
    "decoder_type": (None, "the decoder is always an RNN"),
    "model_type": (None, "text only; the model family is -model_family"),
    "data_type": (None, "text only"),
    "transformer_ff": (None, "no Transformer here"),
    "heads": (None, "no Transformer here"),
    "position_encoding": (None, "no Transformer here"),
    "label_smoothing": (None, "not implemented"),
    "truncated_decoder": (None, "not implemented"),
    "copy_attn_force": (None, "not implemented"),
    "model_dtype": ("-precision", "translate.py's -precision fp32 / fp16 / bf16 / int8 names the "
                                  "decoding's precision; training's is -amp"),
    "ratio": (None, "a prediction's length is bounded by -max_length and -min_length, not by a "
                    "ratio to its source's"),
    "save_format": (None, "training checkpoints are PyTorch files (torch.save, read back with "
                          "weights_only=True) with their training state; onmt_release_model "
                          "-format safetensors writes the weights without it"),
    "phrase_table": (None, "-replace_unk copies the attended source word"),
    "fp32": ("-precision fp32", "one option names the decoding's precision"),
    "int8": ("-precision int8", "one option names the decoding's precision"),
}

"""The model options (train.py; a checkpoint stores them)."""
import argparse

from onmt.opts.families import FAMILIES


def model_opts(parser):
    g = parser.add_argument_group("Model")
    g.add("-model_family", "--model_family", default=None, choices=list(FAMILIES),
          help="the model family (onmt/opts/families.py): "
               + "; ".join(f"{f.name}: {f.help}" for f in FAMILIES.values())
               + ". Default: -reinforced's or -copy_attn's, else rnn. Not OpenNMT-py's "
                 "-model_type, which names the input's data type (text, img, audio)")
    g.add("-reinforced", "--reinforced", action="store_true",
          help="-model_family reinforced: Paulus et al.'s deep reinforced model (implies "
               "-share_embeddings -copy_attn)")
    g.add("-rnn_type", "--rnn_type", default="LSTM", choices=["LSTM", "GRU"], help="recurrent unit")
    g.add("-layers", "--layers", type=int, default=-1,
          help="layers of encoder and decoder (overrides the two below)")
    g.add("-enc_layers", "--enc_layers", type=int, default=2, help="encoder layers")
    g.add("-dec_layers", "--dec_layers", type=int, default=2, help="decoder layers")
    g.add("-brnn", "--brnn", action="store_true",
          help="bidirectional encoder (each direction gets rnn_size/2)")
    g.add("-encoder_type", "--encoder_type", dest="brnn", type=_encoder_type, metavar="rnn|brnn",
          help="OpenNMT-py's name: -encoder_type brnn is -brnn, "
               "rnn a unidirectional encoder (the default)")
    g.add("-rnn_size", "--rnn_size", "-hidden_size", "--hidden_size", type=int, default=500,
          help="decoder hidden size = encoder output size "
               "(-hidden_size: OpenNMT-py's name, the same option)")
    g.add("-word_vec_size", "--word_vec_size", type=int, default=500, help="word embedding size")
    g.add("-dropout", "--dropout", type=float, default=0.3, help="dropout probability")
    g.add("-global_attention", "--global_attention", default="general",
          choices=["none", "dot", "general", "mlp"],
          help="attention type; none is Cho et al.'s fixed-context model")
    g.add("-input_feed", "--input_feed", type=int, default=1, choices=[0, 1],
          help="feed the previous attentional vector to the decoder")
    g.add("-copy_attn", "--copy_attn", action="store_true",
          help="-model_family copy: See et al.'s pointer-generator (OpenNMT-py's flag)")
    g.add("-coverage_attn", "--coverage_attn", action="store_true",
          help="coverage vector in attention and coverage loss")
    g.add("-lambda_coverage", "--lambda_coverage", type=float, default=1.0,
          help="weight of the coverage loss")
    g.add("-share_embeddings", "--share_embeddings", action="store_true",
          help="share encoder/decoder embeddings (-share_vocab data)")
    g.add("-pre_word_vecs_enc", "--pre_word_vecs_enc", default=None,
          help="word vectors for the encoder embeddings: GloVe text ('word v1 ... vE' lines) or "
               "word2vec text, plain or .gz (OpenNMT-py's .pt tensors are refused in one line)")
    g.add("-pre_word_vecs_dec", "--pre_word_vecs_dec", default=None,
          help="word vectors for the decoder embeddings, as -pre_word_vecs_enc")
    g.add("-param_init", "--param_init", type=float, default=0.1,
          help="uniform init range (0: PyTorch defaults)")
    g = parser.add_argument_group("Model, OpenNMT-py's options "
                                  "(docs/upstream.md, Upstream OpenNMT-py flags)")
    g.add("-share_decoder_embeddings", "--share_decoder_embeddings", action="store_true",
          help="the generator's output matrix is the decoder embedding (needs -word_vec_size = "
               "-rnn_size); -reinforced ties W_out = tanh(E_tgt W_proj) already: implied there")
    g.add("-fix_word_vecs_enc", "--fix_word_vecs_enc", action="store_true",
          help="do not train the encoder embeddings "
               "(with -share_embeddings: the one shared matrix)")
    g.add("-fix_word_vecs_dec", "--fix_word_vecs_dec", action="store_true",
          help="do not train the decoder embeddings "
               "(with -share_embeddings: the one shared matrix)")
    g.add("-bridge", "--bridge", action="store_true",
          help="a linear layer + ReLU between the encoder's final states and the decoder's initial "
               "states (one per state, h and c of an LSTM, "
               "over each example's layers concatenated)")
    g.add("-reuse_copy_attn", "--reuse_copy_attn", action="store_true",
          help="accepted, changes nothing: "
               "the pointer-generator always copies with the decoder's attention")
    g.add("-copy_attn_type", "--copy_attn_type", default=None,
          choices=["none", "dot", "general", "mlp"],
          help="accepted only equal to -global_attention: the copy distribution IS the decoder's "
               "attention (default: -global_attention, as in OpenNMT-py)")
    g = parser.add_argument_group("Reinforced model")
    g.add("-no_temporal_attn", "--no_temporal_attn", action="store_true",
          help="ablation: plain (not intra-temporal) encoder attention")
    g.add("-no_intra_decoder_attn", "--no_intra_decoder_attn", action="store_true",
          help="ablation: no intra-decoder attention")
    g.add("-no_tied_output", "--no_tied_output", action="store_true",
          help="ablation: free W_out instead of tanh(E_tgt W_proj)")
    g.add("-intra_attn_scale", "--intra_attn_scale", default="none", choices=["none", "sqrt"],
          help="the bilinear attention scores e = h^d . W h (eqs. 2 and 6): none = as written; "
               "sqrt = divided by sqrt(-rnn_size), the same equations with W / sqrt(H), which "
               "trains stably (docs/user-guide.md, Sanity tasks). A fresh -reinforced model uses "
               "sqrt unless given; checkpoints without it: none")
    g.add("-scheduled_sampling", "--scheduled_sampling", type=float, default=0.0,
          help="probability that the next decoder input is the model's own previous prediction")
    g.add("-scheduled_sampling_mode", "--scheduled_sampling_mode", default="argmax",
          choices=["argmax", "sample"],
          help="how the model's own prediction is chosen for scheduled sampling")
    g.add("-scheduled_sampling_start", "--scheduled_sampling_start", type=int, default=0,
          help="training steps without scheduled sampling before it starts (0: from the first "
               "step, as Paulus et al.)")
    g.add("-scheduled_sampling_ramp", "--scheduled_sampling_ramp", type=int, default=0,
          help="steps over which scheduled sampling's probability rises linearly from 0 to "
               "-scheduled_sampling once it starts (0: at once)")


ENCODER_TYPES = {"rnn": False, "brnn": True}


def _encoder_type(value):
    """-encoder_type rnn|brnn -> the value of -brnn (the option stores into opt.brnn)."""
    if value not in ENCODER_TYPES:
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from rnn, brnn)")
    return ENCODER_TYPES[value]


# Model options added after checkpoints existed -> the value that gives the model such a checkpoint
# was trained with, each its default (tests/unit/test_opts.py checks). A checkpoint without one of
# them means that value (train.py -train_from, translate.py: update.update_saved_model_opts fills it
# in); a checkpoint without another model option is damaged. (-model_family None: the family of its
# -reinforced and -copy_attn, families.family_name.)
ADDED_MODEL_OPTIONS = {"model_family": None, "share_decoder_embeddings": False,
                       "fix_word_vecs_enc": False, "fix_word_vecs_dec": False, "bridge": False,
                       "reuse_copy_attn": False, "copy_attn_type": None, "intra_attn_scale": "none",
                       "scheduled_sampling_start": 0, "scheduled_sampling_ramp": 0}

"""The options of what comes after training: translate.py, onmt_tune_decoding, evaluate.py and
tools/plot_attention.py."""


def translate_opts(parser):
    g = parser.add_argument_group("Data")
    g.add("-model", "--model", required=True, nargs="+", action="extend",
          help="checkpoint to translate with; several: their ensemble (as OpenNMT-py's): each "
               "step's distribution the mean of theirs, copy scores included; one vocabulary")
    g.add("-src", "--src", required=True,
          help="source file, one example per line ('-': the standard input)")
    g.add("-tgt", "--tgt", default=None, help="score these targets (gold score, perplexity)")
    g.add("-output", "--output", default="pred.txt", help="predictions, one line per input line")
    device_opts(g)
    g.add("-verbose", "--verbose", action="store_true", help="print source, prediction and score")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-seed", "--seed", type=int, default=829,
          help="random seed (of -random_sampling_*'s samples too)")
    g = parser.add_argument_group("Search")
    translate_search_opts(g)
    g.add("-dump_beam", "--dump_beam", default="",
          help="write the beam search's history (per example and step: token ids, words, scores, "
               "backpointers) to this JSON file")
    g = parser.add_argument_group("Inspection")
    g.add("-attn_plot", "--attn_plot", default="",
          help="write a PNG per example into this folder: encoder attention, intra-decoder "
               "attention and p(copy) per output step (needs matplotlib: pip install .[plot])")
    g.add("-attn_plot_n", "--attn_plot_n", type=int, default=10,
          help="plot the first N examples (0: all)")
    g.add("-attn_debug", "--attn_debug", default="",
          help="dump the raw attention arrays and p(copy) of every example to this file "
               "(re-plot with tools/plot_attention.py)")
    g.add("-profile", "--profile", type=int, default=0,
          help="profile the first N batches with torch.profiler: log the top 25 operators by self "
               "CPU (and CUDA) time and write a Chrome trace to -profile_trace; "
               "the translation goes on (0: off)")
    g.add("-profile_trace", "--profile_trace", default="",
          help="the -profile Chrome trace (JSON; default: the -output path without "
               "extension + _profile.json)")
    input_rule_opts(parser)
    g = parser.add_argument_group("Output")
    g.add("-report_rouge", "--report_rouge", action="store_true",
          help="score the predictions against -tgt with ROUGE (built-in scorer) at the end")
    g.add("-detokenize", "--detokenize", action="store_true",
          help="write readable text (he's, (, sentence case where the data was lowercased: "
               "onmt/prepare/detokenize.py) instead of the model's tokens; -report_rouge still "
               "scores the tokens; implies -replace_unk unless -keep_unk")
    g.add("-with_score", "--with_score", action="store_true",
          help="as OpenNMT-py's: write each prediction followed by a tab and its score")
    g.add("-report_time", "--report_time", action="store_true",
          help="as OpenNMT-py's: log the translation's total time, the time per line and the "
               "lines per second")
    g.add("-keep_unk", "--keep_unk", action="store_true",
          help="with -detokenize, write <unk> where the model predicts it (by default -detokenize "
               "replaces it with the attended source word, as -replace_unk)")


# translate.py's search options that are not SearchSettings fields (onmt/translate/decoding.py):
# -avoid_trigram_repetition becomes -block_ngram_repeat 3 (update_translate_opts), -replace_unk
# is the Translator's; every other option of translate_search_opts is a field of that name
NOT_SEARCH_SETTINGS = ("avoid_trigram_repetition", "replace_unk")


def translate_search_opts(g):
    """translate.py's search options, the one list of them: the API's keyword arguments
    (onmt/opts/api_names.py api_options), SearchSettings' fields (with NOT_SEARCH_SETTINGS) and,
    through search_opts, onmt_tune_decoding's fixed set (tune_fixed_opts);
    tests/unit/test_api_names.py checks that a new one reaches each."""
    beam_opts(g)
    search_opts(g)
    g.add("-ban_unk_token", "--ban_unk_token", action="store_true",
          help="as OpenNMT-py's: never produce <unk> (a copied source word is still produced)")
    sampling_opts(g)


def beam_opts(g):
    """The size and length rules of translate.py's search (the API's keywords too)."""
    g.add("-beam_size", "--beam_size", type=int, default=5, help="beam size (1: greedy)")
    g.add("-n_best", "--n_best", type=int, default=1,
          help="output the n best hypotheses (with -random_sampling_*: n samples)")
    g.add("-min_length", "--min_length", type=int, default=0, help="minimum prediction length")
    g.add("-max_length", "--max_length", type=int, default=100, help="maximum prediction length")
    g.add("-length_penalty", "--length_penalty", default="none",
          choices=["none", "avg", "wu", "power"],
          help="divide a hypothesis's summed log-probabilities by: none 1, avg its length, "
               "wu ((5 + length) / 6)^alpha, power length^alpha (Hugging Face's float "
               "length_penalty); the default none differs from OpenNMT-py's default (avg) and "
               "Hugging Face's (1.0, the same as avg)")
    g.add("-alpha", "--alpha", type=float, default=0.0,
          help="the exponent of the wu and power length penalties")


def sampling_opts(g):
    """Test-time sampling (upstream's names and meanings): off unless one is given."""
    g.add("-random_sampling_topk", "--random_sampling_topk", type=int, default=1,
          help="as OpenNMT-py's: sample each token from the K most likely ones (-1 or 0: the whole "
               "distribution; 1, the default: the argmax, no sampling; default 0 when "
               "-random_sampling_topp or -random_sampling_temp is given); -n_best samples per "
               "line, seeded by -seed; needs -beam_size 1 (implied)")
    g.add("-random_sampling_topp", "--random_sampling_topp", type=float, default=0.0,
          help="as OpenNMT-py's: sample from the most likely tokens whose summed probability "
               "first reaches p (nucleus sampling, Holtzman et al. 2019; 0: off), in [0, 1]")
    g.add("-random_sampling_temp", "--random_sampling_temp", type=float, default=1.0,
          help="as OpenNMT-py's: divide the log-probabilities by this before sampling "
               "(0: the argmax)")


def device_opts(g):
    """Where and how a checkpoint decodes: translate.py's and onmt_tune_decoding's."""
    g.add("-gpu", "--gpu", type=int, default=-1, help="GPU id (-1: CPU)")
    g.add("-batch_size", "--batch_size", type=int, default=30, help="examples per batch")
    g.add("-precision", "--precision", default="fp32", choices=["fp32", "bf16", "fp16", "int8"],
          help="the decoding's vocabulary product (the largest of a step) in this precision, its "
               "weight prepared once: bf16 on CUDA or a CPU with native bfloat16 "
               "(avx512_bf16 / amx_bf16), fp16 on CUDA, int8 (PyTorch's dynamic quantization, as "
               "upstream's) on the CPU; the log-softmax and the copy mixture stay float32; "
               "a precision the device cannot run fast is refused")
    g.add("-compile", "--compile", action="store_true",
          help="torch.compile the mlp attention's scores (See et al.'s and Bahdanau's models; "
               "other models have nothing compiled) on their first call (a few seconds): "
               "8-10 %% faster at CNN/DM's source lengths on the CPU, no faster at Gigaword's; "
               "the same predictions")


def search_opts(g):
    """The search settings that onmt_tune_decoding holds fixed while it tunes the length rule."""
    g.add("-beam_sync_every", "--beam_sync_every", type=int, default=1,
          help="ask the host whether hypotheses ended and how many examples are live every N "
               "search steps instead of every step (one transfer for N; a done example's rows "
               "decode up to N-1 steps more, masked: the same outputs). For CUDA, where each "
               "check waits for the device; not yet measured there (docs/GPU.md); -dump_beam "
               "and sampling check every step")
    g.add("-coverage_penalty", "--coverage_penalty", default="none",
          choices=["none", "wu", "summary"],
          help="coverage penalty of a hypothesis's summed attention cov_i: "
               "wu: -beta*sum_i log(min(cov_i, 1)); summary: beta*(sum_i max(cov_i, 1) - S) "
               "(onmt/translate/decoding.py)")
    g.add("-beta", "--beta", type=float, default=0.0, help="coverage penalty parameter")
    g.add("-stepwise_penalty", "--stepwise_penalty", action="store_true",
          help="apply the coverage penalty to the running scores at every step, not only to "
               "finished hypotheses")
    g.add("-block_ngram_repeat", "--block_ngram_repeat", type=int, default=0,
          help="never repeat an n-gram of this size (0: off)")
    g.add("-avoid_trigram_repetition", "--avoid_trigram_repetition", action="store_true",
          help="same as -block_ngram_repeat 3")
    g.add("-ignore_when_blocking", "--ignore_when_blocking", nargs="+", default=[],
          help="tokens ignored by n-gram blocking")
    g.add("-replace_unk", "--replace_unk", action="store_true",
          help="replace <unk> with the source word of highest attention")


def input_rule_opts(parser):
    g = parser.add_argument_group("Input as in training (defaults: the checkpoint's preprocessing)")
    g.add("-src_seq_length_trunc", "--src_seq_length_trunc", type=int, default=0,
          help="cut -src lines to N tokens (default: as the training data was cut; 0: not cut)")
    g.add("-tgt_seq_length_trunc", "--tgt_seq_length_trunc", type=int, default=0,
          help="cut -tgt lines to N tokens for gold scoring "
               "(default: as the training data was cut; 0: not cut)")


def tune_decoding_opts(parser):
    g = parser.add_argument_group("Data")
    g.add("-model", "--model", required=True, nargs="+", action="extend",
          help="checkpoint(s) to choose from (each decoded with every length rule of the grid)")
    g.add("-ensemble", "--ensemble", action="store_true",
          help="the -model checkpoints are one candidate, their ensemble (translate.py -model "
               "A B): only the length rule is chosen")
    g.add("-src", "--src", required=True, help="the tuning set's sources, one example per line")
    g.add("-tgt", "--tgt", required=True, help="the tuning set's reference summaries, one per line")
    g.add("-output", "--output", required=True,
          help="YAML of the best checkpoint and search settings, read back by translate.py -config")
    g.add("-report", "--report", default="",
          help="also write every setting's scores and length to this JSON file")
    g.add("-metric", "--metric", default="rougeL",
          choices=["rouge1", "rouge2", "rougeL", "rougeLsum"],
          help="the ROUGE F1 (built-in scorer) the best setting maximizes; "
               "ties go to the earlier setting")
    device_opts(g)
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-seed", "--seed", type=int, default=829, help="random seed")
    g = parser.add_argument_group("The grid of length rules (every combination is decoded)")
    g.add("-length_penalty", "--length_penalty", default="wu", choices=["none", "avg", "wu"],
          help="the length penalty of every setting")
    g.add("-alpha", "--alpha", type=float, nargs="+", default=[0.0, 0.5, 1.0, 1.5, 2.0],
          help="values of wu's alpha (0: no penalty)")
    g.add("-min_length", "--min_length", type=int, nargs="+", default=[0],
          help="values of the minimum length")
    g.add("-widen", "--widen", action="store_true",
          help="while the best setting's alpha or minimum length is at the top or bottom of its "
               "values, add the next value one step beyond (the step: the spacing of the two "
               "outermost values) and tune again, up to -max_alpha and -max_min_length; without it "
               "an edge choice is only reported")
    g.add("-max_alpha", "--max_alpha", type=float, default=3.0,
          help="-widen's bound on alpha")
    g.add("-max_min_length", "--max_min_length", type=int, default=0,
          help="-widen's bound on the minimum length (0: -max_length)")
    g.add("-match_output", "--match_output", default="",
          help="also write, as YAML like -output's, the best checkpoint and alpha with the minimum "
               "length (or, when its outputs are longer, the maximum length) whose mean output "
               "length on the tuning set comes nearest -match_target: a length-matched rule, so "
               "that systems are compared at one length")
    g.add("-match_target", "--match_target", type=float, default=0.0,
          help="the mean output length in words -match_output aims at (0: the references')")
    tune_fixed_opts(parser.add_argument_group("Search, the same in every setting"))
    input_rule_opts(parser)


def tune_fixed_opts(g):
    """onmt_tune_decoding's search options held fixed over its grid (with input_rule_opts': its
    FIXED, onmt/bin/tune_decoding.py): the beam, the length limit and translate.py's search_opts."""
    g.add("-beam_size", "--beam_size", type=int, default=5, help="beam size (1: greedy)")
    g.add("-max_length", "--max_length", type=int, default=100,
          help="maximum prediction length (default: the checkpoint's own rule, as translate.py)")
    search_opts(g)


def evaluate_opts(parser):
    g = parser.add_argument_group("Evaluate")
    g.add("-pred", "--pred", required=True, nargs="+", action="extend",
          help="predictions, one summary per line (plain or .gz); a second file is compared with "
               "the first by a paired bootstrap test")
    g.add("-ref", "--ref", required=True, nargs="+", action="extend",
          help="references, one summary per line; several files (or -ref given again): "
               "several references")
    g.add("-json", "--json", default="",
          help="also write the scores (and intervals) to this JSON file")
    g.add("-official", "--official", action="store_true",
          help="score with the original ROUGE-1.5.5 Perl script (needs perl and XML::Parser)")
    g.add("-bootstrap", "--bootstrap", type=int, default=0,
          help="N bootstrap samples: 95%% confidence intervals "
               "(and the paired test's samples; 1000 if 0)")
    g.add("-seed", "--seed", type=int, default=1, help="seed of the bootstrap samples")
    g.add("-limit_bytes", "--limit_bytes", type=int, default=0,
          help="score only the first N bytes of every summary (ROUGE-1.5.5 -b; DUC-2004: 75)")
    g.add("-limit_words", "--limit_words", type=int, default=0,
          help="score only the first N words of every summary (ROUGE-1.5.5 -l)")
    g.add("-recall_only", "--recall_only", action="store_true",
          help="report recall only (as DUC does)")
    g.add("-no_stemming", "--no_stemming", action="store_true",
          help="no Porter stemming (ROUGE-1.5.5 without -m; the standard setting stems)")
    g.add("-sent_per_line", "--sent_per_line", action="store_true",
          help="files hold one sentence per line, an empty line after each summary")
    g.add("-sentence_split", "--sentence_split", default=".",
          help="a summary's sentences (ROUGE-Lsum) end with this token, unless it has <t> ... </t> "
               "tags ('' = one sentence)")


def plot_attention_opts(parser):
    g = parser.add_argument_group("Re-plot an -attn_debug dump (tools/plot_attention.py)")
    g.add("-attn_debug", "--attn_debug", required=True,
          help="a dump written by translate.py -attn_debug")
    g.add("-attn_plot", "--attn_plot", required=True,
          help="write a PNG per example into this folder (needs matplotlib: pip install .[plot])")
    g.add("-attn_plot_n", "--attn_plot_n", type=int, default=10,
          help="plot the first N examples (0: all)")
    g.add("-log_file", "--log_file", default="", help="also log to this file")


def explore_opts(parser):
    g = parser.add_argument_group("Explore summaries in a browser (onmt_explore, tools/explore.py)")
    g.add("-src", "--src", required=True,
          help="the source file the systems summarized, one article per line")
    g.add("-ref", "--ref", required=True, help="the reference summaries, one per line")
    g.add("-system", "--system", required=True, nargs="+", action="extend",
          help="each system's output: a translate.py -attn_debug dump (.npz: attention and copy "
               "marks shown) or a prediction file, one summary per line; "
               "the first two are compared")
    g.add("-names", "--names", nargs="+", default=[],
          help="a name per -system (default: the files' names)")
    g.add("-output", "--output", required=True,
          help="the HTML file to write (self-contained, opens from disk)")
    g.add("-title", "--title", default="", help="the page's title (default: from -src)")
    g.add("-bootstrap", "--bootstrap", type=int, default=1000,
          help="bootstrap samples of the summary panel's 95%% intervals and paired test")
    g.add("-seed", "--seed", type=int, default=1, help="seed of the bootstrap samples")

"""train.py's options other than the model's."""

def train_opts(parser):
    g = parser.add_argument_group("General")
    g.add("-data", "--data", required=True, help="prefix given to preprocess.py -save_data")
    g.add("-data_config", "--data_config", default=None,
          help="set by a -config in OpenNMT-py 3.x form (its data: mapping of corpora, src_vocab, "
               "save_data, ...): train.py builds the dataset for it, or finds it built "
               "(docs/upstream.md, OpenNMT-py 3.x configs)")
    g.add("-save_model", "--save_model", default="model",
          help="checkpoints are {save_model}_step_{N}.pt")
    g.add("-train_from", "--train_from", default="", help="resume everything from this checkpoint")
    g.add("-gpu", "--gpu", type=int, default=-1, help="GPU id (-1: CPU)")
    g.add("-seed", "--seed", type=int, default=3435, help="random seed")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-amp", "--amp", action="store_true",
          help="automatic mixed precision on CUDA, and with -amp_dtype bf16 on a CPU with native "
               "bfloat16 (avx512_bf16 / amx_bf16; ignored on other CPUs); the vocabulary products "
               "give float32 results, and the softmax, copy mixture, "
               "losses and rewards stay float32")
    g.add("-amp_dtype", "--amp_dtype", default="bf16", choices=["bf16", "fp16"],
          help="-amp's low precision: bf16 (bfloat16, no loss scaling) or fp16 "
               "(float16 with a GradScaler)")
    g.add("-compile", "--compile", action="store_true",
          help="torch.compile the decoder's step (the reinforced model's teacher-forced passes and "
               "rollouts, the step-loop decoders; See et al.'s fused decoder pass is not "
               "compiled), on first use (~30 s on the CPU). Measured no faster on the CPU "
               "(docs/benchmarks.md, Lower precision); for GPUs (bench/gpu_suite.sh)")
    g.add("-cuda_graphs", "--cuda_graphs", action="store_true",
          help="on CUDA: the teacher-forced pass and the ML loss captured as CUDA graphs "
               "(torch.compile mode reduce-overhead), one per batch shape: give -length_buckets; "
               "eager on the CPU and for the mixed objective (logged). Not yet measured on a GPU "
               "(docs/GPU.md)")
    g = parser.add_argument_group("Schedule")
    g.add("-train_steps", "--train_steps", type=int, default=100000,
          help="stop after this many steps")
    g.add("-epochs", "--epochs", type=int, default=0,
          help="if > 0, train this many epochs instead of -train_steps")
    g.add("-valid_steps", "--valid_steps", type=int, default=10000, help="validate every N steps")
    g.add("-save_checkpoint_steps", "--save_checkpoint_steps", type=int, default=5000,
          help="save every N steps")
    g.add("-keep_checkpoint", "--keep_checkpoint", type=int, default=-1,
          help="keep the last N checkpoints (0 or -1: all, as in OpenNMT-py)")
    g.add("-report_every", "--report_every", type=int, default=50, help="log every N steps")
    g.add("-early_stopping", "--early_stopping", type=int, default=0,
          help="OpenNMT-py's: stop when N validations in a row bring no improvement of every "
               "-early_stopping_criteria (0: off); the best checkpoint is "
               "{save_model}_best.pt either way")
    g.add("-early_stopping_criteria", "--early_stopping_criteria", nargs="*", default=None,
          choices=["ppl", "accuracy", "rougeL"],
          help="OpenNMT-py's: what improves: validation perplexity (default), accuracy, or the "
               "greedy validation ROUGE-L F1 (rougeL, turns on -valid_rouge); "
               "with several, all must improve")
    g.add("-train_time_limit", "--train_time_limit", type=float, default=0.0,
          help="stop (and save) after this many seconds of training steps in this run, validation "
               "and saving excluded: CPU seconds of this process on the CPU, wall seconds on CUDA "
               "(0: no limit); checkpoints record the total as train_seconds, so equal-compute "
               "comparisons can resume")
    g = parser.add_argument_group("Batching")
    g.add("-batch_size", "--batch_size", type=int, default=64,
          help="batch size (sentences or tokens)")
    g.add("-batch_type", "--batch_type", default="sents", choices=["sents", "tokens"],
          help="unit of -batch_size")
    g.add("-valid_batch_size", "--valid_batch_size", type=int, default=32,
          help="validation batch size (sentences)")
    g.add("-pool_factor", "--pool_factor", type=int, default=100,
          help="batches per length-sorted bucket pool")
    g.add("-length_buckets", "--length_buckets", type=int, default=0,
          help="pad each batch's source and target length up to the next of K lengths per octave "
               "(m 2^e, K <= m < 2K): few batch shapes (what a CUDA graph needs), at most 1/K "
               "padding added (0: off, each batch as long as its longest example)")
    g.add("-accum_count", "--accum_count", type=int, default=1,
          help="one optimizer step per N batches (per process): "
               "the update of one N times larger batch")
    g = parser.add_argument_group("Several processes (docs/user-guide.md, Several GPUs)")
    g.add("-world_size", "--world_size", type=int, default=1,
          help="number of processes; N > 1 outside torchrun spawns N on this machine (CPU, or GPUs "
               "with -gpu_ranks); under torchrun its WORLD_SIZE counts")
    g.add("-gpu_ranks", "--gpu_ranks", type=int, nargs="*", default=[],
          help="OpenNMT-py's: the ranks that run on GPUs, 0 .. world_size-1 (rank r uses GPU r); "
               "-world_size 1 -gpu_ranks 0 is -gpu 0")
    g = parser.add_argument_group("Optimization")
    g.add("-optim", "--optim", default="sgd", choices=["sgd", "adagrad", "adam"], help="optimizer")
    g.add("-learning_rate", "--learning_rate", type=float, default=1.0, help="learning rate")
    g.add("-adagrad_accumulator_init", "--adagrad_accumulator_init", type=float, default=0.0,
          help="initial Adagrad accumulator")
    g.add("-adam_beta1", "--adam_beta1", type=float, default=0.9)
    g.add("-adam_beta2", "--adam_beta2", type=float, default=0.999)
    g.add("-max_grad_norm", "--max_grad_norm", type=float, default=5.0,
          help="clip gradients to this norm (0: off)")
    g.add("-decay_method", "--decay_method", default="none", choices=["none", "noam", "rsqrt"],
          help="OpenNMT-py's schedules (onmt/utils/optim.py): "
               "noam = lr * rnn_size^-0.5 * min(step^-0.5, step * warmup_steps^-1.5); "
               "rsqrt = lr / sqrt(max(step, warmup_steps)); none = constant, or exponential decay "
               "when one of the three options below is given")
    g.add("-learning_rate_decay", "--learning_rate_decay", type=float, default=None,
          help="-decay_method none: multiply the rate by this at -start_decay_steps and every "
               "-decay_steps after (OpenNMT-py's default 0.5 when one of the three is given; "
               "none given: constant rate)")
    g.add("-start_decay_steps", "--start_decay_steps", type=int, default=None,
          help="-decay_method none: the first decayed step (OpenNMT-py's default 50000 when one of "
               "the three is given)")
    g.add("-decay_steps", "--decay_steps", type=int, default=None,
          help="-decay_method none: steps between decays (OpenNMT-py's default 10000 when one of "
               "the three is given)")
    g.add("-warmup_steps", "--warmup_steps", type=int, default=4000,
          help="warm-up of -decay_method noam and rsqrt")
    g.add("-average_decay", "--average_decay", type=float, default=0.0,
          help="OpenNMT-py's: keep an exponential moving average of the weights, "
               "average = (1 - d) average + d weights with d = max(average_decay, "
               "1 - (step + 1) / (step + 10)) (e.g. 1e-4); validation, {save_model}_best.pt and "
               "the checkpoints' model (what translate.py reads) are the average; -train_from goes "
               "on from the trained weights (0: off)")
    g.add("-average_every", "--average_every", type=int, default=1,
          help="OpenNMT-py's: with -average_decay, update the average every N steps")
    g.add("-reset_optim", "--reset_optim", default="none",
          choices=["none", "all", "states", "keep_states"],
          help="with -train_from, what to reset of the checkpoint's optimizer: none = keep its "
               "state; all / states = a fresh state; keep_states = keep its state. In every case "
               "the optimizer options (-optim, -learning_rate, ...) are the checkpoint's "
               "unless given again")
    g = parser.add_argument_group("Loss")
    g.add("-normalization", "--normalization", default="tokens", choices=["tokens", "sents"],
          help="divide a step's summed loss by its target tokens or by its examples (OpenNMT-py's "
               "default is sents; this project's, tokens)")
    g.add("-copy_loss_by_seqlength", "--copy_loss_by_seqlength", action="store_true",
          help="copy models: each example's ML loss (and coverage loss) divided by its target "
               "length, then the usual -normalization")
    g = parser.add_argument_group("Inspection")
    g.add("-sample_every", "--sample_every", type=int, default=0,
          help="every N steps, log one validation example's source, reference and greedy "
               "prediction (copied words marked) with its mean p(copy) (0: off)")
    g.add("-tensorboard", "--tensorboard", action="store_true",
          help="write TensorBoard scalars (needs the tensorboard package: "
               "pip install .[tensorboard])")
    g.add("-tensorboard_log_dir", "--tensorboard_log_dir", default="runs/onmt",
          help="folder of the TensorBoard event files")
    g.add("-profile", "--profile", type=int, default=0,
          help="profile N training steps (after 2 warm-up steps) with torch.profiler: log the top "
               "25 operators by self CPU (and CUDA) time, write a Chrome trace to -profile_trace, "
               "then stop (0: off)")
    g.add("-profile_trace", "--profile_trace", default="",
          help="the -profile Chrome trace (JSON; default: {save_model}_profile.json)")
    g = parser.add_argument_group("Reinforcement learning (self-critical policy gradient)")
    g.add("-rl_gamma", "--rl_gamma", type=float, default=None,
          help="train gamma * L_rl + (1 - gamma) * L_ml "
               "(absent: ML only; the paper: 0.9984; 1: RL only)")
    g.add("-rl_normalization", "--rl_normalization", default="sum", choices=["sum", "tokens"],
          help="how the two terms are scaled before mixing: sum = the paper's literal sums over "
               "each sequence (both divided by the batch's reference tokens, so their ratio is the "
               "paper's); tokens = each term per token of its own sequences (ML per reference "
               "token, RL per sampled token), as many reimplementations do")
    # the reward table's names (onmt/losses/rewards.py REWARDS, the one place a reward goes), as
    # names: onmt/opts/ sits above onmt/losses/ and imports no torch; test_rewards.py ties the two
    g.add("-rl_reward", "--rl_reward", default="rougeL",
          choices=["rougeL", "rouge1", "rouge2", "mix", "rougeL_recall", "rougeL_bp"],
          help="reward of a sequence against the reference: ROUGE F1 (mix: the mean of the three), "
               "ROUGE-L recall, or ROUGE-L F1 times BLEU's brevity penalty "
               "min(1, exp(1 - len(ref) / len(hyp)))")
    g.add("-max_gen_length", "--max_gen_length", type=int, default=0,
          help="longest sampled / greedy sequence, </s> excluded (0: the data's target "
               "truncation or limit)")
    g.add("-valid_rouge", "--valid_rouge", dest="valid_rouge", action="store_const", const=True,
          default=None,
          help="validation also reports greedy ROUGE (default: on with -rl_gamma)")
    g.add("-no_valid_rouge", "--no_valid_rouge", dest="valid_rouge", action="store_const",
          const=False,
          help="no greedy ROUGE at validation")

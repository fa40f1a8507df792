"""The options of the checkpoint tools: onmt_average_models (upstream OpenNMT-py's name and flags)
and onmt_release_model (upstream's name; -format safetensors and -card are this project's)."""
from onmt.opts.parse import config_opts, make_parser

RELEASE_FORMATS = ("pt", "safetensors")
RELEASE_PRECISIONS = ("fp32", "fp16")


def average_models_opts(parser):
    g = parser.add_argument_group("Average checkpoints (onmt_average_models)")
    g.add("-models", "--models", "-m", required=True, nargs="+", action="extend",
          help="the checkpoints to average (the same model family, sizes and vocabulary), e.g. the "
               "last N of a run kept with -keep_checkpoint N")
    g.add("-output", "--output", "-o", required=True,
          help="the averaged checkpoint to write (weights, options, vocabulary and preprocessing "
               "record of the last -models; no optimizer or RNG state: translate.py reads it, "
               "train.py -train_from it with -reset_optim all)")
    g.add("-log_file", "--log_file", default="", help="also log to this file")


def release_model_opts(parser):
    g = parser.add_argument_group("Release a model (onmt_release_model)")
    g.add("-model", "--model", "-m", required=True,
          help="the checkpoint to release (a training checkpoint, an averaged one)")
    g.add("-output", "--output", "-o", required=True,
          help="-format pt: the file to write; -format safetensors: the folder to write "
               "(model.safetensors, config.json and, with -card, README.md)")
    g.add("-format", "--format", default="pt", choices=list(RELEASE_FORMATS),
          help="pt: one torch file (weights, options, vocabulary, input rules); safetensors: a "
               "folder with the weights as safetensors and the rest as JSON, no pickle at all "
               "(needs the safetensors package: pip install .[release])")
    g.add("-precision", "--precision", default="fp32", choices=list(RELEASE_PRECISIONS),
          help="the floating weights' precision: fp16 halves the file; the model is decoded in "
               "float32 from the fp16 values (docs/user-guide.md, Releasing a model)")
    g.add("-card", "--card", action="store_true",
          help="also write a model card with YAML metadata (task, data, metrics, options): "
               "README.md inside the -format safetensors folder, or X.md beside a -format pt X.pt")
    g.add("-metrics", "--metrics", default="",
          help="with -card: an onmt_evaluate -json file whose ROUGE scores the card reports")
    g.add("-log_file", "--log_file", default="", help="also log to this file")


def average_models_parser():
    p = make_parser("Checkpoints -> one checkpoint of their averaged weights")
    config_opts(p)
    average_models_opts(p)
    return p


def release_model_parser():
    p = make_parser("Checkpoint -> a model to hand over: weights, options, vocabulary, no training "
                    "state")
    config_opts(p)
    release_model_opts(p)
    return p

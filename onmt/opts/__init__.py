"""Every command-line option of the toolkit, declared once, one function per group; every option can
also come from a YAML file given with ``-config``.

    data.py, model.py, train.py, translate.py, server.py   the declarations
                  (`model_opts(parser)`, ...)
    families.py   each model family's option knowledge (FAMILIES): what it implies, refuses and
                  alone accepts, its recipe, its paper's settings, its test-time defaults, what a
                  resume may change
    parse.py      the exact-name parser, unknown-option messages, `parse_with_given` / `given` (read
                  only in onmt/opts/), `parse_values` (the API's options, no command line), one
                  parser per command
    update.py     `update_*`: what options imply, and defaults for what a namespace lacks;
                  `resolve_*_run`: a run's options, with the defaults a checkpoint or the data give
    validate.py   `validate_*`: the cross-option checks; they never change `opt`

An entry point parses, updates, then validates:

    opt = opts.parse_with_given(opts.translate_parser(), argv)
    opts.update_translate_opts(opt)
    opts.validate_translate_opts(opt)

A checkpoint's model options go through `update_saved_model_opts` and `validate_model_opts`. What
depends on a checkpoint or the data makes a new namespace, checked in turn; nothing writes `opt`
after validation:

    run, notes = opts.resolve_translate_run(opt, model_opt, preprocess, target_limit)
    opts.validate_translate_run(run)
"""
from onmt.errors import OptionError
from onmt.opts.data import CNNDM_FORMATS, GIGAWORD_FORMATS, prepare_opts, preprocess_opts
from onmt.opts.families import FAMILIES, family_name
from onmt.opts.model import ADDED_MODEL_OPTIONS, ENCODER_TYPES, model_opts
from onmt.opts.parse import (
    UPSTREAM_OPTIONS,
    build_vocab_parser,
    config_opts,
    evaluate_parser,
    explore_parser,
    given,
    given_values,
    make_parser,
    parse_values,
    parse_with_given,
    plot_attention_parser,
    prepare_cnndm_parser,
    prepare_gigaword_parser,
    preprocess_parser,
    repeated_options,
    save_config_opts,
    saved_options,
    server_parser,
    train_parser,
    translate_parser,
    tune_decoding_parser,
    unknown_option_message,
    write_config,
)
from onmt.opts.server import server_opts, validate_server_opts
from onmt.opts.train import train_opts
from onmt.opts.translate import (
    evaluate_opts,
    explore_opts,
    plot_attention_opts,
    translate_opts,
    tune_decoding_opts,
)
from onmt.opts.update import (
    distributed_choices,
    fill_defaults,
    lacking_model_options,
    option_names,
    resolve_train_run,
    resolve_translate_run,
    resume_adds_parameters,
    update_evaluate_opts,
    update_explore_opts,
    update_model_opts,
    update_plot_attention_opts,
    update_prepare_opts,
    update_preprocess_opts,
    update_saved_model_opts,
    update_train_opts,
    update_translate_opts,
    update_tune_decoding_opts,
)
from onmt.opts.validate import (
    check_compile,
    check_model_numbers,
    check_precision,
    check_saved_model_types,
    paper_differences,
    paper_note,
    validate_evaluate_opts,
    validate_explore_opts,
    validate_model_opts,
    validate_plot_attention_opts,
    validate_prepare_opts,
    validate_preprocess_opts,
    validate_train_opts,
    validate_train_run,
    validate_translate_opts,
    validate_translate_run,
    validate_tune_decoding_opts,
    value_type_problem,
)

__all__ = [
    "OptionError", "CNNDM_FORMATS", "GIGAWORD_FORMATS", "prepare_opts", "preprocess_opts",
    "FAMILIES", "family_name", "ADDED_MODEL_OPTIONS", "ENCODER_TYPES", "model_opts",
    "UPSTREAM_OPTIONS", "build_vocab_parser", "config_opts", "evaluate_parser", "given",
    "given_values", "make_parser", "parse_values", "parse_with_given", "plot_attention_parser",
    "prepare_cnndm_parser", "prepare_gigaword_parser", "preprocess_parser",
    "repeated_options", "save_config_opts",
    "saved_options", "train_parser", "translate_parser", "unknown_option_message", "write_config",
    "train_opts", "evaluate_opts", "plot_attention_opts", "translate_opts", "distributed_choices",
    "fill_defaults", "lacking_model_options", "option_names", "resolve_train_run",
    "resolve_translate_run", "resume_adds_parameters", "update_evaluate_opts", "update_model_opts",
    "update_plot_attention_opts", "update_prepare_opts", "update_preprocess_opts",
    "update_saved_model_opts", "update_train_opts", "update_translate_opts", "check_model_numbers",
    "check_compile", "check_precision", "check_saved_model_types", "value_type_problem",
    "paper_differences", "paper_note", "validate_evaluate_opts", "validate_model_opts",
    "validate_plot_attention_opts", "validate_prepare_opts", "validate_preprocess_opts",
    "validate_train_opts", "validate_train_run", "validate_translate_opts",
    "validate_translate_run", "tune_decoding_parser", "tune_decoding_opts",
    "update_tune_decoding_opts", "validate_tune_decoding_opts", "explore_parser", "explore_opts",
    "update_explore_opts", "validate_explore_opts", "server_parser", "server_opts",
    "validate_server_opts",
]

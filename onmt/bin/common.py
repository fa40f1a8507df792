"""What the entry points train.py and translate.py share at start-up."""
from onmt.opts import parse_with_given, repeated_options
from onmt.utils.files import check_distinct_outputs, check_not_inputs
from onmt.utils.logging import init_logger
from onmt.utils.memory import reuse_freed_memory_for
from onmt.utils.output_rule import check_replaceable


def start(parser, update, validate, argv=None, inputs=None, outputs=None, before_log=None):
    """The common start of train and translate: parse the options, `update` them
    (onmt/opts/update.py) and `validate` them, start the log, and set the host allocator for a CPU
    run (memory.py). `inputs(opt)`: the files the command reads ({"-src": path, ...}), which
    -log_file may not be; `outputs(opt)`: the files it writes ({"-output": path, ...}, -log_file
    among them), no two of which may be one file, checked before the log is opened (and -log_file,
    appended to, by the one output rule: never a checkpoint, a dataset's file, a corpus);
    `before_log(opt)`: any other check to make before the log file is created. Returns (opt,
    torch.device of -gpu)."""
    import torch  # start-up time: this module imports no torch at its top

    opt = parse_with_given(parser, argv)
    update(opt)
    if inputs is not None:
        # the log is opened for appending
        check_not_inputs({"-log_file": opt.log_file}, inputs(opt))
    if outputs is not None:
        check_distinct_outputs(outputs(opt))
    if vars(opt).get("log_file") and not vars(opt).get("overwrite"):
        # appended to: never to a checkpoint, a dataset's file, a corpus (the one output rule)
        check_replaceable(opt.log_file, f"-log_file {opt.log_file}", "log")
    if before_log is not None:
        before_log(opt)
    logger = init_logger(opt.log_file)
    if repeated_options(opt):
        logger.warning(repeated_options(opt))
    validate(opt)
    device = torch.device(f"cuda:{opt.gpu}" if opt.gpu >= 0 else "cpu")
    reuse_freed_memory_for(device)
    return opt, device

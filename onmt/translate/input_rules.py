"""Test input = training input: the preprocessing a checkpoint records, applied to -src and -tgt.

A checkpoint carries `ckpt["preprocess"]` (onmt/inputters/vocab_builder.py INPUT_OPTIONS): whether
the data was lowercased, the source/target truncation and the source/target length limits. The
rules translate.py follows, each logged once:

- tokenizing: when the training text came from the prepare tools (`prepare.json`, carried as the
  record's "text"), -src and -tgt are tokenized with the same PTB-style tokenizer
  (onmt/prepare/tokenize.py) and lowercased as that text was; already tokenized input is unchanged
  (tokenizing twice changes nothing), so raw articles and prepared ones give the same predictions;
- lowercasing: -src and -tgt are lowercased when the training data was (-lower, or prepare's
  lowercasing); a lowercased vocabulary has no cased word to match, so this is not optional;
- source truncation: -src lines are cut to the data's -src_seq_length_trunc (CNN/DM: 800 tokens);
  `-src_seq_length_trunc N` overrides it (0: no truncation). The source length *filter*
  (-src_seq_length) dropped training examples; test examples are never dropped, nor cut by it;
- target truncation: -tgt lines (gold scoring, GOLD PPL) are cut to the data's
  -tgt_seq_length_trunc, as validation targets were; `-tgt_seq_length_trunc N` overrides it.
  -report_rouge always scores against the -tgt file as written, never truncated;
- prediction length: without -max_length, predictions stop at the longest target the training
  data allowed: its -tgt_seq_length_trunc, else its -tgt_seq_length; a limit above
  NO_LIMIT_ABOVE tokens means the data had none, and the option's default (100) applies;
- n-gram blocking: without -block_ngram_repeat (or -avoid_trigram_repetition), the model family's
  test-time rule from the registry (ModelEntry.block_ngram_repeat: 3, no repeated trigram, for the
  reinforced model as in Paulus et al.; 0 for the others).
A checkpoint without the record (written before it existed) gets -src and -tgt as given.
"""
from typing import List, NamedTuple, Optional, Tuple

from onmt.inputters.vocab_builder import target_length_limit
from onmt.opts import given


class InputRules(NamedTuple):
    lower: bool = False
    tokenize: bool = False            # PTB-style, as prepare tokenized the training text
    src_trunc: int = 0                # 0: no truncation
    tgt_trunc: int = 0
    max_length: int = 100
    block_ngram_repeat: int = 0


def resolve(opt, model_opt, preprocess: Optional[dict]) -> Tuple[InputRules, List[str]]:
    """The rules for translate options `opt`, the checkpoint's model options and its preprocessing
    record (None for an older checkpoint); with one log line per rule."""
    from onmt.model_builder import model_entry
    notes = []
    if preprocess is None:
        notes.append("the checkpoint has no record of its preprocessing (an older checkpoint): "
                     "-src and -tgt are used as given, neither lowercased nor truncated")
        preprocess = {}
    text = preprocess.get("text") or {}
    tokenize = text.get("tokenize") == "ptb"
    if tokenize:
        notes.append("tokenizing -src and -tgt as prepare tokenized the training text (PTB-style; "
                     "tokenized input is unchanged)")
    lower = bool(preprocess.get("lower", False))
    if lower:
        notes.append("lowercasing -src and -tgt: the training data was preprocessed with -lower")
    elif text.get("lower"):
        lower = True
        notes.append("lowercasing -src and -tgt: prepare lowercased the training text")
    src_trunc = _trunc(opt, preprocess, "src", "-src", notes)
    tgt_trunc = _trunc(opt, preprocess, "tgt", "-tgt", notes) if opt.tgt else 0

    if given(opt, "max_length"):
        max_length = opt.max_length
        notes.append(f"predictions stop at {max_length} tokens (-max_length)")
    else:
        limit = _data_target_limit(preprocess)
        max_length = limit or opt.max_length
        notes.append(f"predictions stop at {max_length} tokens: " +
                     ("the training targets' length limit (-max_length to change)" if limit else
                      "the -max_length default (the training data recorded no target limit)"))

    if given(opt, "block_ngram_repeat") or given(opt, "avoid_trigram_repetition"):
        block = opt.block_ngram_repeat
        rule = f"no repeated {block}-gram" if block else "off"
        notes.append(f"n-gram blocking: {rule} (-block_ngram_repeat given)")
    else:
        entry = model_entry(model_opt)
        block = entry.block_ngram_repeat
        rule = f"no repeated {block}-gram, the {entry.name} model's test-time rule" if block else \
            f"off, the {entry.name} model's default"
        notes.append(f"n-gram blocking: {rule} (-block_ngram_repeat N to change)")
    return InputRules(lower, tokenize, src_trunc, tgt_trunc, max_length, block), notes


def _trunc(opt, preprocess, side, flag, notes):
    name = f"{side}_seq_length_trunc"
    if given(opt, name):
        n = getattr(opt, name)
        notes.append(f"{flag} truncated to {n} tokens (-{name})" if n else f"{flag} not truncated (-{name} 0)")
        return n
    n = int(preprocess.get(name, 0) or 0)
    if n:
        notes.append(f"{flag} truncated to {n} tokens, as preprocessing truncated the training data "
                     f"(-{name} N to change, 0 for none)")
    return n


def _data_target_limit(preprocess):
    """The longest training target: its truncation, else its length filter; 0 when none is recorded."""
    return target_length_limit(preprocess, default=0)


def prepare_lines(lines, lower=False, trunc=0, tokenize=False):
    """Lines as the model saw training text: PTB-tokenized (`tokenize`), lowercased, cut to `trunc`
    whitespace tokens (0: not cut). Untouched lines are returned as they are (an empty line stays
    empty)."""
    if lines is None or (not lower and not trunc and not tokenize):
        return lines
    if tokenize:
        from onmt.prepare.tokenize import ptb_tokenize
        lines = [" ".join(ptb_tokenize(line)) for line in lines]
    out = []
    for line in lines:
        if lower:
            line = line.lower()
        if trunc:
            toks = line.split()
            if len(toks) > trunc:
                line = " ".join(toks[:trunc])
        out.append(line)
    return out

"""The data options: the prepare tools' (tools/prepare_cnndm.py, tools/prepare_gigaword.py) and
preprocess.py's."""

CNNDM_FORMATS = ("auto", "opennmt", "bin", "hf", "seed")
GIGAWORD_FORMATS = ("auto", "rush", "seed")


def prepare_opts(parser, formats=CNNDM_FORMATS):
    """tools/prepare_cnndm.py and tools/prepare_gigaword.py (their `formats` differ; see
    onmt/prepare/)."""
    g = parser.add_argument_group("Prepare")
    g.add("-input", "--input", required=True, help="folder holding the corpus as published")
    g.add("-output", "--output", required=True,
          help="folder to write {train,valid,test}.{src,tgt}.txt into (made if missing)")
    g.add("-format", "--format", default="auto", choices=formats,
          help="the form of -input (auto: detected from the file names, and logged)")
    g.add("-lower", "--lower", dest="lower", action="store_true", default=True,
          help="lowercase the text")
    g.add("-no_lower", "--no_lower", dest="lower", action="store_false",
          help="keep the case (default: lowercase, lower=%(default)s)")
    g.add("-tokenize", "--tokenize", default="auto", choices=("auto", "ptb", "none"),
          help="auto: PTB-style tokenization of raw text (the Hugging Face export), pre-tokenized "
               "forms kept as they are; ptb: tokenize every form; none: split on whitespace only")
    g.add("-splits", "--splits", nargs="+", default=["train", "valid", "test"],
          choices=("train", "valid", "test"),
          help="splits to write; those the corpus holds are written, the others logged")
    g.add("-report_every", "--report_every", type=int, default=100000,
          help="log progress every N examples")
    g.add("-log_file", "--log_file", default="", help="also log to this file")


def preprocess_opts(parser):
    g = parser.add_argument_group("Data")
    g.add("-train_src", "--train_src", required=True, help="training source file (plain or .gz)")
    g.add("-train_tgt", "--train_tgt", required=True, help="training target file (plain or .gz)")
    g.add("-valid_src", "--valid_src", default=None, help="validation source file")
    g.add("-valid_tgt", "--valid_tgt", default=None, help="validation target file")
    g.add("-save_data", "--save_data", required=True,
          help="output prefix for vocabulary and shards")
    g.add("-shard_size", "--shard_size", type=int, default=1000000, help="examples per shard")
    g.add("-seed", "--seed", type=int, default=3435, help="random seed")
    g.add("-report_every", "--report_every", type=int, default=100000,
          help="progress is a bar on a terminal, else a log line about every 10%% of a pass; for "
               "an input without a size (a pipe), a log line every N lines")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g.add("-overwrite", "--overwrite", action="store_true",
          help="accepted for OpenNMT-py's configs: a run always replaces the dataset of "
               "-save_data, atomically (the old one stays until the new one is complete)")
    g.add("-filter_valid", "--filter_valid", action="store_true",
          help="accepted for OpenNMT-py's configs: the valid split is always filtered by the "
               "length rules of the training split here "
               "(OpenNMT-py filters it only with this flag)")
    g.add("-num_threads", "--num_threads", type=int, default=1,
          help="worker processes for counting and numericalizing")
    g = parser.add_argument_group("Vocabulary")
    g.add("-src_vocab_size", "--src_vocab_size", type=int, default=50000,
          help="source vocabulary size (specials included)")
    g.add("-tgt_vocab_size", "--tgt_vocab_size", type=int, default=50000,
          help="target vocabulary size (specials included)")
    g.add("-src_words_min_frequency", "--src_words_min_frequency", type=int, default=0,
          help="drop source words rarer than this")
    g.add("-tgt_words_min_frequency", "--tgt_words_min_frequency", type=int, default=0,
          help="drop target words rarer than this")
    g.add("-share_vocab", "--share_vocab", action="store_true",
          help="one frequency-ordered word list; the target vocabulary is its prefix")
    g.add("-dynamic_dict", "--dynamic_dict", action="store_true",
          help="per-example OOV lists, src_ex and tgt_ex (copy)")
    g.add("-src_vocab", "--src_vocab", default=None,
          help="take the source vocabulary from this file: one word a line, optionally "
               "'word count' (a vocabulary file of this project or OpenNMT-py's), in its order, "
               "cut to -src_vocab_size; with -share_vocab the one shared list")
    g.add("-tgt_vocab", "--tgt_vocab", default=None,
          help="take the target vocabulary from this file (as -src_vocab; not with -share_vocab)")
    g.add("-lower", "--lower", action="store_true", help="lowercase the text")
    g = parser.add_argument_group("Pruning")
    g.add("-src_seq_length", "--src_seq_length", type=int, default=50,
          help="drop examples with a longer source")
    g.add("-tgt_seq_length", "--tgt_seq_length", type=int, default=50,
          help="drop examples with a longer target")
    g.add("-src_seq_length_trunc", "--src_seq_length_trunc", type=int, default=0,
          help="truncate sources to this length (0: off)")
    g.add("-tgt_seq_length_trunc", "--tgt_seq_length_trunc", type=int, default=0,
          help="truncate targets to this length (0: off)")

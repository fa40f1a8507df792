"""Parsing: the exact-name parser, the one-line message of an unknown option (with what an upstream
OpenNMT-py option is here), which options the user gave, and the parser of each command."""
import argparse
import difflib
import io
import sys

import configargparse

from onmt.errors import OptionError
from onmt.opts.data import CNNDM_FORMATS, GIGAWORD_FORMATS, prepare_opts, preprocess_opts
from onmt.opts.model import model_opts
from onmt.opts.server import server_opts
from onmt.opts.train import train_opts
from onmt.opts.translate import (
    evaluate_opts,
    explore_opts,
    plot_attention_opts,
    translate_opts,
    tune_decoding_opts,
)
from onmt.opts.upstream_names import UPSTREAM_OPTIONS  # noqa: F401  (also read from here)


class _ExactParser(configargparse.ArgumentParser):
    """configargparse's parser with exact option names. argparse matches a prefix of a single-dash
    option even with allow_abbrev=False (-src_vocab became -src_vocab_size) and reads -hidden_size
    as -h with the value 'idden_size'; here an option given on the command line must be spelt in
    full, and an unknown one stops with one line that says, for an upstream OpenNMT-py option, what
    it is here, else the closest names."""

    def parse_known_args(self, args=None, namespace=None, **kwargs):
        self._check_names(sys.argv[1:] if args is None else list(args))
        return super().parse_known_args(args=args, namespace=namespace, **kwargs)

    def error(self, message):
        """One line, no usage block (`-h` prints that): `train.py: error: MESSAGE (see -h)`, status
        2. An unknown key of a -config file gets the command line's message (the closest names)."""
        # the command line's are refused before: -config's
        if message.startswith("unrecognized arguments:"):
            names = [t.split("=", 1)[0] for t in message.split(":", 1)[1].split()
                     if t.startswith("-")]
            names = list(dict.fromkeys("-" + n.lstrip("-") for n in names))
            if names:
                where = getattr(self._config_file_parser, "last_file", None) or "the -config file"
                message = (f"{where}: {len(names)} key(s) not available here, none of them run: "
                           if len(names) > 1 else f"{where}: ") + "; ".join(
                    unknown_option_message(n, self._option_string_actions) for n in names)
        self.exit(2, f"{self.prog}: error: {message} (see -h)\n")

    def _check_names(self, argv):
        """Every option name known, and `self.repeated` the options given twice with different
        values (argparse silently takes the last: `-beam_size 5 ... -beam_size 2`), which
        `parse_with_given` hands to the entry point to name in its log (`repeated_options`);
        an option that gathers its values (-ref a -ref b, `action="extend"`) may be given again,
        and so may any option with the same value."""
        seen, current = {}, None     # dest -> [(the name as given, its words)]; the one being read
        for token in argv:
            if token == "--":
                break
            if len(token) < 2 or token[0] != "-" or _is_number(token):
                if current is not None:
                    current[1].append(token)
                continue
            name, eq, value = token.partition("=")
            action = self._option_string_actions.get(name)
            if action is None:
                self.exit(2, f"{self.prog}: error: "
                             f"{unknown_option_message(name, self._option_string_actions)}\n")
            current = None
            if type(action).__name__ not in ("_ExtendAction", "_AppendAction", "_CountAction"):
                current = (name, [value] if eq else [])
                seen.setdefault(action.dest, []).append(current)
        self.repeated = []
        for occurrences in seen.values():
            words = [" ".join(v) or "(a flag)" for _, v in occurrences]
            if len(set(words)) > 1:
                self.repeated.append(f"{occurrences[0][0]} given {len(words)} times "
                                     f"({', then '.join(words)}): the last, {words[-1]}, is used")


def _is_number(token):
    try:
        float(token)
        return True
    except ValueError:
        return False


def unknown_option_message(name, known):
    """One line about an option `name` (e.g. "-hidden_size") that the parser with options `known`
    lacks."""
    bare = name.lstrip("-")
    if bare in UPSTREAM_OPTIONS:
        here, what = UPSTREAM_OPTIONS[bare]
        if here:
            return f"unknown option {name}: OpenNMT-py's -{bare} is {here} here ({what})"
        return f"unknown option {name}: OpenNMT-py's -{bare} has no counterpart here ({what})"
    close = difflib.get_close_matches(name, [k for k in known if not k.startswith("--")], n=3,
                                      cutoff=0.6)
    return f"unknown option {name}" + (f" (did you mean {' or '.join(close)}?)" if close else "")


class _BoundedYAMLParser(configargparse.YAMLConfigFileParser):
    """YAML -config files whose values, aliases expanded, hold at most MAX_CONFIG_ITEMS items: a few
    hundred bytes of nested aliases ("billion laughs") would otherwise expand into gigabytes when
    the values become option strings."""

    def parse(self, stream):
        name = self.last_file = getattr(stream, "name", "the config file")
        try:
            text = stream.read()
        except UnicodeDecodeError as e:
            raise configargparse.ConfigFileParserException(
                f"{name} is not UTF-8 text (byte {e.start}: {e.reason})") from None
        yaml, loader, _ = self._load_yaml()
        try:
            obj = yaml.load(text, Loader=loader)
        # the file and the line, not PyYAML's '"<unicode string>", line 3'
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
            where = f"{name}, line {mark.line + 1}, column {mark.column + 1}" if mark else name
            what = " ".join(str(getattr(e, "problem", None) or e).split())
            raise configargparse.ConfigFileParserException(
                f"{where}: not valid YAML ({what})") from None
        except Exception as e:
            raise configargparse.ConfigFileParserException(
                f"{name}: not valid YAML ({e})") from None
        from onmt.opts.config_file import key_problem  # a cycle: config_file imports parse
        problem = key_problem(yaml, loader, text, name)   # twice, empty, not a name: one line
        if problem:
            raise configargparse.ConfigFileParserException(problem)
        if isinstance(obj, dict) and any(isinstance(k, str) and k.startswith("-") for k in obj):
            # `-reinforced: true`, as on the command line: the option's name without its dashes
            obj = {k.lstrip("-") if isinstance(k, str) else k: v for k, v in obj.items()}
            text = yaml.safe_dump(obj)
        if _expanded_size(obj, MAX_CONFIG_ITEMS) > MAX_CONFIG_ITEMS:
            name = getattr(stream, "name", "the config file")
            raise configargparse.ConfigFileParserException(
                f"{name}: its values expand to more than {MAX_CONFIG_ITEMS} items (nested YAML "
                "aliases?); an options file holds options")
        from onmt.opts import upstream_config  # a cycle: onmt.opts imports parse
        # an OpenNMT-py 3.x config: its data: mapping of corpora
        if upstream_config.is_upstream(obj):
            try:
                dropped = upstream_config.ignored(obj)
                obj = upstream_config.translate(obj)
            except upstream_config.UpstreamConfigError as e:
                raise configargparse.ConfigFileParserException(f"{name}: {e}") from None
            if dropped:
                obj["config_notes"] = f"ignored upstream keys in {name}: {', '.join(dropped)}"
            text = yaml.safe_dump(obj)
        return super().parse(io.StringIO(text))


MAX_CONFIG_ITEMS = 100_000


def _expanded_size(obj, limit):
    """The number of items of `obj` with every alias expanded (lists and mappings counted through),
    counted no further than just past `limit`."""
    count, stack = 0, [obj]
    while stack and count <= limit:
        x = stack.pop()
        count += 1
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return count


def make_parser(description):
    """An empty parser of this toolkit: exact names, YAML -config files (bounded), defaults in
    -help."""
    return _ExactParser(
        description=description,
        config_file_parser_class=_BoundedYAMLParser,
        formatter_class=configargparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )


def parse_with_given(parser, argv=None):
    """Parse `argv` (sys.argv when None) -> opt, with `opt._given`: the dests of the options given
    on the command line or in a -config file, as opposed to defaults (see `given`)."""
    opt = parser.parse_args(argv)
    saved = [(a, a.default) for a in parser._actions]
    try:
        for a, _ in saved:
            a.default = argparse.SUPPRESS
        explicit, _ = parser.parse_known_args(argv)
    finally:
        for a, d in saved:
            a.default = d
    opt._given = frozenset(vars(explicit)) - {"config", "_config_notes"}
    opt._repeated = "; ".join(getattr(parser, "repeated", []))
    return opt


def repeated_options(opt):
    """The log line naming the options the command line gave twice with different values (the last
    is used, as argparse and OpenNMT-py do: the experiments give a base command, then what an arm
    changes), or "" when there is none."""
    note = vars(opt).get("_repeated")
    return f"options given more than once: {note}" if note else ""


def parse_values(parser, values):
    """The options `parser` gives for a command line holding exactly `values`
    ({option name: value}), with no command line: each value converted and checked as the parser
    converts and checks its option's words (type, choices: an OptionError in the parser's words),
    the others their defaults (a required option None), `opt._given` the names of `values`. A flag
    is given by a true value; a None value, a false flag and an empty list are not given (as an
    option left off a command line)."""
    opt = argparse.Namespace()
    for action in parser._actions:
        if action.dest != "help" and not hasattr(opt, action.dest):
            setattr(opt, action.dest, None if action.required else action.default)
    named = set()
    for name, value in values.items():
        action = parser._option_string_actions[f"-{name}"]
        several = action.nargs not in (None, "?", 0)   # the option takes a list of words
        if (value is None or (action.nargs == 0 and not value)
                or (several and isinstance(value, (list, tuple)) and not value)):
            continue
        words = ([] if action.nargs == 0 else [str(v) for v in value]
                 if several and isinstance(value, (list, tuple)) else [str(value)])
        try:
            action(parser, opt, parser._get_values(action, words) if words else None, f"-{name}")
        except argparse.ArgumentError as e:
            raise OptionError(str(e)) from None
        named.add(action.dest)
    opt._given = frozenset(named)
    return opt


def given(opt, name):
    """True when option `name` was given by the user (command line or -config), not a default.
    A namespace not made by `parse_with_given` (a checkpoint's, a test's) has no `_given`: nothing
    in it was given."""
    return name in vars(opt).get("_given", ())


def given_values(opt, names):
    """{name: value} of the options among `names` that the user gave (`given`), in `names`'
    order."""
    return {name: getattr(opt, name) for name in names if given(opt, name)}


def saved_options(opt):
    """vars(opt) without the parsing bookkeeping (what a checkpoint stores)."""
    return {k: v for k, v in vars(opt).items() if not k.startswith("_")}


def config_opts(parser):
    parser.add("-config", "--config", is_config_file_arg=True, help="YAML file with options")
    # what reading the -config file found worth one log line (the upstream keys it dropped); set by
    # the YAML parser, logged by the entry point once it logs
    parser.add("-config_notes", "--config_notes", dest="_config_notes", default="",
               help=argparse.SUPPRESS)


def overwrite_opts(parser):
    """-overwrite: the one output rule's way out (utils/output_rule.py)."""
    parser.add("-overwrite", "--overwrite", action="store_true",
               help="replace an existing output file even when it is not this command's kind of "
                    "output (a checkpoint, a dataset's file, a corpus, another kind of file), "
                    "which is refused without it (OpenNMT-py's name)")


def save_config_opts(parser):
    parser.add("-save_config", "--save_config", default=None,
               help="write the options of this command (given and defaults) to this YAML file, "
                    "usable as -config, and exit without doing anything else (OpenNMT-py's)")


def write_config(opt, path, parser, write=None):
    """-save_config: the options of `opt` that differ from `parser`'s defaults (what was given, and
    what the given options implied), as YAML readable back with -config to the same options. A
    default is left out: written, it would count as given (and, say, -warmup_steps without
    -decay_method noam is refused). `write(path, text)` writes it (the entry points give
    files.write_text_atomic: whole or not at all, a stream written through: DESIGN §5 keeps utils/
    out of opts/)."""
    import yaml  # only for a -config file (start-up time)
    defaults = {}
    for action in parser._actions:
        defaults.setdefault(action.dest, action.default)
    values = {k: v for k, v in saved_options(opt).items()
              if k not in ("config", "save_config") and v is not None and v != [] and
              (given(opt, k) or not (k in defaults and defaults[k] == v))}
    text = yaml.safe_dump(values, default_flow_style=False, sort_keys=True, allow_unicode=True)
    if write is None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        write(path, text)


# --------------------------------------------------------------------------- one parser per command
def preprocess_parser():
    p = make_parser("Text -> vocabulary + numericalized shards")
    config_opts(p)
    save_config_opts(p)
    preprocess_opts(p)
    return p


def train_parser():
    p = make_parser("Shards -> checkpoints")
    config_opts(p)
    save_config_opts(p)
    model_opts(p)
    train_opts(p)
    return p


def build_vocab_parser():
    """onmt_build_vocab: a training config (3.x form) and -n_sample."""
    p = train_parser()
    p.add("-n_sample", "--n_sample", type=int, default=5000,
          help="OpenNMT-py's: lines of each corpus to count (-1: all)")
    overwrite_opts(p)
    return p


def _with_config(description, add_opts, *args, overwrite=False):
    """A tool's parser: -config / -save_config, then `add_opts(parser, *args)`; `overwrite`:
    -overwrite too (a command that writes files)."""
    p = make_parser(description)
    config_opts(p)
    add_opts(p, *args)
    if overwrite:
        overwrite_opts(p)
    return p


def translate_parser():
    return _with_config("Checkpoint + source -> predictions", translate_opts, overwrite=True)


def tune_decoding_parser():
    return _with_config("Checkpoints + a tuning set -> the best checkpoint and length rule",
                        tune_decoding_opts, overwrite=True)


def evaluate_parser():
    return _with_config("Predictions + references -> ROUGE", evaluate_opts, overwrite=True)


def prepare_cnndm_parser():
    return _with_config("CNN/DailyMail as published -> {train,valid,test}.{src,tgt}.txt",
                        prepare_opts, CNNDM_FORMATS)


def prepare_gigaword_parser():
    return _with_config("Gigaword as published -> {train,valid,test}.{src,tgt}.txt",
                        prepare_opts, GIGAWORD_FORMATS)


def explore_parser():
    return _with_config("Sources, references and systems' summaries -> "
                        "one HTML page to explore them", explore_opts, overwrite=True)


def server_parser():
    """onmt_server: upstream's -config is its JSON of models (conf.json), no YAML options file."""
    p = make_parser("Checkpoints by id -> summaries over HTTP (OpenNMT-py's onmt_server)")
    server_opts(p)
    return p


def plot_attention_parser():
    return _with_config("-attn_debug dump -> one PNG per example", plot_attention_opts)

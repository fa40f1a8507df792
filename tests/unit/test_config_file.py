"""A -config file's keys (onmt/opts/config_file.py): a key given twice, one without a value and one
that is not a name are each one line naming the file, the line and the key, exit status 2, for every
command (they were: the last value, the default and an AttributeError traceback)."""
import pytest
import yaml

from onmt import opts
from onmt.opts.config_file import key_problem


@pytest.mark.parametrize("text, line, words", [
    ("rnn_size: 64\nlayers: 2\nrnn_size: 32\n", 3, "rnn_size given twice (first on line 1)"),
    ("-rnn_size: 64\nrnn_size: 32\n", 2, "rnn_size given twice (first on line 1)"),
    ("layers: 2\nrnn_size:\n", 2, "rnn_size has no value"),
    ("layers: 2\nrnn_size: ~\n", 2, "rnn_size has no value"),
    ("16: 32\n", 1, "key 16 is not an option name (YAML reads it as a number"),
    ("layers: 1\ntrue: x\n", 2, "key true is not an option name (YAML reads it as true/false"),
    ("layers: 1\n'': 3\n", 2, "an empty key ''"),
    ("layers: 1\nrnn_size: {a: 1}\n", 2, "rnn_size is given a mapping; an option's value is"),
    ("layers: 1\n'--': 3\n", 2, "an empty key '--'"),
    ("", None, "no options in it (an empty file, or only comments)"),
    ("# nothing\n", None, "no options in it"),
    ("- rnn_size\n- 64\n", 1, "a list, not option names with values"),
    ("data:\n  a: {path_src: x, path_tgt: y}\n  a: {path_src: x, path_tgt: z}\nsave_data: s\n", 3,
     "a given twice (first on line 2)"),
])
@pytest.mark.parametrize("parser", [opts.train_parser, opts.translate_parser, opts.preprocess_parser,
                                    opts.evaluate_parser])
def test_a_bad_key_is_one_line_naming_the_file_line_and_key(tmp_path, capsys, text, line, words, parser):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    with pytest.raises(SystemExit) as exc:
        opts.parse_with_given(parser(), ["-config", str(cfg)])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert (f"{cfg}, line {line}: " if line else f"{cfg}: ") in err and words in err, err
    assert "Traceback" not in err


def test_sound_keys_pass_and_aliases_are_walked_once():
    loader = yaml.SafeLoader
    assert key_problem(yaml, loader, "rnn_size: 64\nlayers: 2\ngpu_ranks: []\n", "c") is None
    assert key_problem(yaml, loader, "data:\n  a: &b {x: 1}\n  b: *b\n  c: *b\n", "c") is None
    assert key_problem(yaml, loader, "data:\n  a: &a {x: 1}\n  b:\n    <<: *a\n    y: 2\n", "c") is None


@pytest.mark.parametrize("name", ["cnndm_reinforced", "cnndm_rl", "demo_train", "demo_rl", "gigaword_reinforced",
                                  "gigaword_rl"])
def test_the_shipped_configs_have_sound_keys(name):
    with open(f"config/{name}.yaml", encoding="utf-8") as f:
        assert key_problem(yaml, yaml.SafeLoader, f.read(), name) is None

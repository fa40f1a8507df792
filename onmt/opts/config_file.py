"""What a -config file's keys must be: each option once, with a value, named by a string.

PyYAML reads `rnn_size: 64` twice as the last value, `rnn_size:` as None (which configargparse
drops: the default trained, silently) and `16: 32` as the int key 16 (a traceback deep in
configargparse). `key_problem(yaml, loader, text, name)` composes the text (YAML's node tree, which
keeps each key's line) and returns the one line that names the file, the line and the key of the
first such key (or says the file holds no mapping of options at all), or None.
"""

# the keys whose value is a mapping: an OpenNMT-py 3.x config's corpora and its dropped tokenizer
# settings (opts/upstream_config.py)
NESTED = ("data", "src_onmttok_kwargs", "tgt_onmttok_kwargs")
STR, NULL, MERGE = "tag:yaml.org,2002:str", "tag:yaml.org,2002:null", "tag:yaml.org,2002:merge"
KINDS = {"tag:yaml.org,2002:int": "a number", "tag:yaml.org,2002:float": "a number",
         "tag:yaml.org,2002:bool": "true/false", NULL: "null"}


def key_problem(yaml, loader, text, name):
    """The first problem of the keys of the YAML `text` (read from the file `name`): a top-level key
    that is not a string, one without a value, or a key given twice in one mapping (nested mappings,
    an OpenNMT-py 3.x `data:`, included). One line naming `name`, the line and the key; None when
    every key is sound. `yaml`, `loader`: PyYAML and the loader the text was read with."""
    root = yaml.compose(text, Loader=loader)
    if root is None:
        return (f"{name}: no options in it (an empty file, or only comments); a -config file maps "
                "option names to values, e.g. rnn_size: 64")
    if not isinstance(root, yaml.MappingNode):
        what = "a list" if isinstance(root, yaml.SequenceNode) else "one value"
        return (f"{name}, line {root.start_mark.line + 1}: {what}, not option names with values "
                "(e.g. rnn_size: 64)")
    for key, value in root.value:
        line = key.start_mark.line + 1
        if key.tag == MERGE:
            continue
        if (key.tag != STR or not isinstance(key, yaml.ScalarNode)
                or not key.value.strip().lstrip("-").strip()):
            if key.tag == STR and isinstance(key, yaml.ScalarNode):
                return (f"{name}, line {line}: an empty key {key.value!r}; an option's name is "
                        "its words, e.g. rnn_size: 64")
            what = KINDS.get(key.tag, "not a name")
            return (f"{name}, line {line}: key {_shown(key)} is not an option name (YAML reads "
                    f"it as {what}; an option's name is its words, e.g. rnn_size: 64)")
        if isinstance(value, yaml.ScalarNode) and value.tag == NULL:
            return (f"{name}, line {line}: {key.value} has no value (give one, or drop the line "
                    "for the default)")
        if isinstance(value, yaml.MappingNode) and key.value.lstrip("-") not in NESTED:
            return (f"{name}, line {line}: {key.value} is given a mapping; an option's value is a "
                    "word, a number or a list")
    return _duplicate(yaml, root, name)


def _duplicate(yaml, root, name):
    """The first key given twice in one mapping of the tree `root` (`-x` and `x` count as one
    top-level key, as they name one option), as a line; None when there is none. Each node once
    (an alias is not walked again)."""
    stack, seen_nodes = [(root, True)], set()
    while stack:
        node, top = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != MERGE:
                    k = key.value.lstrip("-") if top and key.tag == STR else (key.tag, key.value)
                    line = key.start_mark.line + 1
                    if k in first:
                        return (f"{name}, line {line}: {_shown(key)} given twice (first on line "
                                f"{first[k]}); each key once")
                    first[k] = line
                stack.append((value, False))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, False) for item in node.value)
    return None


def _shown(key):
    if not isinstance(key.value, str):   # a list or a mapping as a key
        return "at column " + str(key.start_mark.column + 1)
    return key.value if len(key.value) <= 60 else key.value[:57] + "..."

"""onmt/opts/upstream_names.py: each upstream OpenNMT-py option not kept here says what it is here."""
def test_every_upstream_name_says_what_it_is_here():
    from onmt.opts.upstream_names import UPSTREAM_OPTIONS
    for name, (here, what) in UPSTREAM_OPTIONS.items():
        assert here is None or here.startswith("-"), name
        assert what and "\n" not in what, name


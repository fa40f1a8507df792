"""Serve summaries over HTTP, as upstream OpenNMT-py's onmt_server (onmt/server/):

    onmt_server -config conf.json [-ip 127.0.0.1] [-port 5000] [-url_root /translator]
                [-batch_window_ms 5] [-max_batch_lines N] [-queue_lines 512] [-request_timeout 60]
    curl -d '[{"src": "an article ...", "id": 100}]' http://127.0.0.1:5000/translator/translate

Needs the `server` extra (aiohttp): without it, one line says how to install it.
"""
import asyncio

from onmt import opts
from onmt.errors import UserError
from onmt.utils.cli import run_main
from onmt.utils.logging import init_logger, logger


def require_aiohttp():
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise UserError("onmt_server needs aiohttp, the server extra: pip install "
                        "'onmt-reinforced[server]' (./run.sh setup installs it)") from None


def main(argv=None):
    opt = opts.parse_with_given(opts.server_parser(), argv)
    opts.validate_server_opts(opt)
    require_aiohttp()
    # after require_aiohttp: the server imports aiohttp (the optional server extra)
    from onmt.server.models import ServedModel, read_conf
    from onmt.server.serve import serve
    specs = read_conf(opt.config)
    init_logger(opt.log_file)
    models = {}
    for spec in specs:
        for note in spec.notes:
            logger.info(note)
        models[spec.id] = ServedModel.load(spec)
        logger.info(f"model {spec.id}: {spec.path} ({models[spec.id].summarizer!r})")
    asyncio.run(serve(opt, models))


def cli():
    """Console-script entry point: user errors in one line, non-zero exit."""
    run_main(main)


if __name__ == "__main__":
    cli()

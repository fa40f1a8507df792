"""onmt_server's life: the models loaded, one batching queue each, the HTTP server started, and on
SIGTERM (or ^C) a graceful drain.

The drain: the listening socket is closed at once (no new connection is accepted), a request that
arrives on an open connection is refused (503, "the server is stopping"), and every request
already accepted is answered (its queue decoded to the end, at most -drain_timeout seconds); then
the process exits 0. `serve` prints one line on stdout once it listens: the address, with the bound
port when -port 0 asked for any free one.
"""
import asyncio
import logging
import signal
import sys

from aiohttp import web

from onmt.errors import UserError
from onmt.server.app import Routes
from onmt.server.batching import MicroBatcher
from onmt.utils.logging import logger


def make_batchers(models, opt):
    """{id: MicroBatcher} decoding each model's requests, -max_batch_lines 0: the model's batch_size
    (translate.py's -batch_size, 30 unless its opt says)."""
    return {i: MicroBatcher(m.decode, max_lines=opt.max_batch_lines or m.batch_size,
                            window=opt.batch_window_ms / 1000.0, queue_lines=opt.queue_lines,
                            per_request=opt.no_request_batching, name=f"model-{i}")
            for i, m in models.items()}


class OneLine(logging.Filter):
    """aiohttp's own log records in one line: a request that is not HTTP (a bad request line, a
    header over 8 KiB, a broken chunk) is answered 400 by aiohttp's parser and logged with its
    traceback; here, with the parser's message instead."""

    def filter(self, record):
        if record.exc_info and record.exc_info[1] is not None:
            what = " ".join(str(record.exc_info[1]).split())
            record.msg, record.args = f"{record.getMessage()}: {what}"[:500], ()
            record.exc_info = record.exc_text = None
        return True


def aiohttp_logs_one_line():
    """aiohttp's loggers write through the toolkit's handlers, one line a record, from warnings."""
    aiohttp_logger = logging.getLogger("aiohttp")
    aiohttp_logger.handlers[:] = logger.handlers
    aiohttp_logger.propagate = False
    aiohttp_logger.setLevel(logging.WARNING)
    for name in ("aiohttp", "aiohttp.server", "aiohttp.web", "aiohttp.access"):
        logging.getLogger(name).addFilter(OneLine())


async def serve(opt, models, announce=None):
    """Serve `models` ({id: ServedModel}) with the options `opt` until SIGTERM or SIGINT, then
    drain.
    `announce(url)`: told the address once the socket listens (default: one line on stdout)."""
    loop = asyncio.get_running_loop()
    aiohttp_logs_one_line()
    batchers = make_batchers(models, opt)
    for b in batchers.values():
        b.start()
    routes = Routes(models, batchers, opt)
    runner = web.AppRunner(routes.app(), access_log=logger if opt.debug else None,
                           shutdown_timeout=opt.drain_timeout, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, opt.ip, opt.port)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        raise UserError(f"cannot listen on {opt.ip}:{opt.port}: {e.strerror or e}") from None
    host, port = runner.addresses[0][:2]
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}{opt.url_root}"
    stop = asyncio.Event()
    signals = (signal.SIGTERM, signal.SIGINT)
    received = []

    def on_signal(signum):
        received.append(signum)
        if stop.is_set():
            logger.info(f"{signal.Signals(signum).name} again: still draining")
        stop.set()
    for s in signals:
        loop.add_signal_handler(s, on_signal, s)
    try:
        (announce or _print_line)(url)
        logger.info(f"serving model(s) {', '.join(map(str, models))} on {url} "
                    f"(POST /translate, GET /models, GET /health)")
        await stop.wait()
        routes.stopping = True
        waiting = sum(b.pending_lines() for b in batchers.values())
        logger.info(f"{signal.Signals(received[0]).name}: draining (no new connection; "
                    f"{waiting} line(s) queued)")
        # stops listening, then waits for the requests in flight (their answers) before closing
        await runner.cleanup()
        for b in batchers.values():
            await b.drain()
    finally:
        for s in signals:
            loop.remove_signal_handler(s)
        if received:   # drained: another SIGTERM or ^C while the process exits changes nothing
            for s in signals:
                signal.signal(s, signal.SIG_IGN)
    answered = sum(b.stats()["requests"] for b in batchers.values())
    logger.info(f"stopped: {answered} request(s) decoded")


def _print_line(url):
    print(f"onmt_server: listening on {url}", flush=True)
    sys.stdout.flush()

"""The options of onmt_server (onmt/server/): upstream OpenNMT-py's server options (-config
conf.json, -ip, -port, -url_root, -debug) and the batching queue's limits. Its -config is upstream's
JSON of models by id, not the YAML options file of the other commands."""
import math

from onmt.errors import OptionError


def server_opts(parser):
    g = parser.add_argument_group("Server (OpenNMT-py's onmt_server options)")
    g.add("-config", "--config", "-c", required=True,
          help="upstream's conf.json: {\"models_root\": folder, \"models\": [{\"id\": 100, "
               "\"model\": \"x.pt\", \"opt\": {\"beam_size\": 5, ...}}, ...]}; each model's opt "
               "holds translate.py's search options, -gpu, -precision and -detokenize")
    g.add("-ip", "--ip", default="127.0.0.1",
          help="address to listen on (0.0.0.0: every interface; the default: this machine only)")
    g.add("-port", "--port", type=int, default=5000,
          help="port to listen on (0: any free port; the bound port is printed)")
    g.add("-url_root", "--url_root", default="/translator",
          help="the routes' prefix: POST {url_root}/translate, GET {url_root}/models, "
               "GET {url_root}/health")
    g.add("-debug", "--debug", action="store_true", help="log every request and its answer")
    g.add("-log_file", "--log_file", default="", help="also log to this file")
    g = parser.add_argument_group("Batching and limits")
    g.add("-batch_window_ms", "--batch_window_ms", type=float, default=5.0,
          help="a batch waits for more requests to decode with it until this many milliseconds "
               "pass without one, at most 4 times this after its first request")
    g.add("-max_batch_lines", "--max_batch_lines", type=int, default=0,
          help="decode at most this many lines (of one or several requests) as one batch "
               "(0: the model's batch_size, translate.py's -batch_size, 30 unless its opt says)")
    g.add("-no_request_batching", "--no_request_batching", action="store_true",
          help="decode each request alone, as upstream's server does (for comparison)")
    g.add("-queue_lines", "--queue_lines", type=int, default=512,
          help="lines waiting to be decoded, at most; a request that would exceed it is refused "
               "(503)")
    g.add("-request_timeout", "--request_timeout", type=float, default=60.0,
          help="a request not answered within this many seconds gets a 503 (0: no limit)")
    g.add("-max_request_bytes", "--max_request_bytes", type=int, default=1 << 20,
          help="a larger request body is refused (413)")
    g.add("-max_request_lines", "--max_request_lines", type=int, default=64,
          help="a request of more items is refused (413)")
    g.add("-max_src_words", "--max_src_words", type=int, default=10000,
          help="an item whose src has more words is refused (413); the checkpoint's source "
               "truncation applies to the rest")
    g.add("-drain_timeout", "--drain_timeout", type=float, default=120.0,
          help="on SIGTERM, wait at most this many seconds for the accepted requests' answers")


def validate_server_opts(opt):
    if not 0 <= opt.port <= 65535:
        raise OptionError(f"-port must be in [0, 65535], got {opt.port}")
    if not opt.url_root.startswith("/") or (len(opt.url_root) > 1 and opt.url_root.endswith("/")):
        raise OptionError(f"-url_root must start with / and not end with one, got {opt.url_root!r}")
    if opt.max_batch_lines < 0:
        raise OptionError(f"-max_batch_lines must be >= 0, got {opt.max_batch_lines}")
    for name in ("queue_lines", "max_request_bytes", "max_request_lines",
                 "max_src_words"):
        if getattr(opt, name) <= 0:
            raise OptionError(f"-{name} must be positive, got {getattr(opt, name)}")
    for name in ("batch_window_ms", "request_timeout", "drain_timeout"):
        value = getattr(opt, name)
        if not math.isfinite(value) or value < 0:
            raise OptionError(f"-{name} must be >= 0, got {value}")
    if opt.max_request_lines > opt.queue_lines:
        raise OptionError(f"-max_request_lines {opt.max_request_lines} is more than -queue_lines "
                          f"{opt.queue_lines}: such a request could never be queued")

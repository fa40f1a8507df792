"""The HTTP side of onmt_server (aiohttp): upstream OpenNMT-py's routes and JSON under -url_root.

    POST {url_root}/translate   [{"src": text, "id": model id}, ...] ->
                                [[{"src", "tgt", "n_best", "pred_score"} per item] per n-best rank]
    GET  {url_root}/models      -> [{"model_id", "opt", "models", "loaded", "timeout"}, ...]
    GET  {url_root}/health      -> {"status": "ok", "models": {id: the batching queue's stats}}

Every error is a JSON object of one line, {"error": message, "status": "error"}, with a 4xx
status for what the client sent (400 bad JSON or items, 404 an unknown model or route, 405, 413 a
request or source too large) and 503 for what the server cannot do now (queue full, time limit,
stopping); an unexpected failure is a 500 with one line, logged, never a traceback in the answer.
"""
import json

from aiohttp import web

from onmt.errors import UserError
from onmt.server.batching import Closed, QueueFull, TimedOut
from onmt.utils.logging import logger

MAX_BYTES = web.AppKey("max_request_bytes", int)


class RequestError(Exception):
    """What is wrong with a request: its HTTP status and one line."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def error_response(status, message):
    return web.json_response({"error": " ".join(str(message).split()), "status": "error"},
                             status=status)


def json_answer(value):
    return web.Response(text=json.dumps(value, ensure_ascii=False), content_type="application/json")


@web.middleware
async def one_line_errors(request, handler):
    """Every error as one JSON line: aiohttp's own (404, 405, 413) included."""
    try:
        return await handler(request)
    except RequestError as e:
        return error_response(e.status, e)
    except web.HTTPRequestEntityTooLarge:
        return error_response(413, f"request body larger than {request.app[MAX_BYTES]} bytes "
                                   "(-max_request_bytes)")
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return error_response(e.status, e.reason)
    except Exception as e:   # a bug: one line for the client, the traceback for the log
        logger.exception(f"{request.method} {request.path}: {e!r}")
        return error_response(500, f"internal error: {type(e).__name__}")


class Routes:
    """The handlers; `models` {id: ServedModel}, `batchers` {id: MicroBatcher}, `opt` the server's
    options (limits, -debug)."""

    def __init__(self, models, batchers, opt):
        self.models, self.batchers, self.opt = models, batchers, opt
        self.default_id = next(iter(models))
        self.stopping = False

    def app(self):
        app = web.Application(middlewares=[one_line_errors],
                              client_max_size=self.opt.max_request_bytes)
        app[MAX_BYTES] = self.opt.max_request_bytes
        root = self.opt.url_root.rstrip("/")
        app.add_routes([web.post(f"{root}/translate", self.translate),
                        web.get(f"{root}/models", self.list_models),
                        web.get(f"{root}/health", self.health)])
        return app

    async def health(self, request):
        return json_answer({"status": "stopping" if self.stopping else "ok",
                            "models": {str(i): b.stats() for i, b in self.batchers.items()}})

    async def list_models(self, request):
        return json_answer([m.describe() for m in self.models.values()])

    async def translate(self, request):
        if self.stopping:
            raise RequestError(503, "the server is stopping")
        body = await request.read()
        items = parse_items(body, self.opt)
        model_id = self._model_id(items)
        model, batcher = self.models[model_id], self.batchers[model_id]
        if self.opt.debug:
            logger.info(f"request: {len(items)} item(s) for model {model_id}")
        try:
            results = await batcher.submit([src for src, _ in items],
                                           timeout=self.opt.request_timeout or None)
        except (QueueFull, TimedOut, Closed) as e:
            raise RequestError(503, e) from None
        except Exception as e:
            if isinstance(e, UserError):   # e.g. out of memory on one line: the client's input
                raise RequestError(413, e) from None
            raise
        n_best = model.n_best
        out = [[{"src": raw, "tgt": nbest[k][0], "n_best": n_best, "pred_score": nbest[k][1]}
                for (_, raw), nbest in zip(items, results)] for k in range(n_best)]
        return json_answer(out)

    def _model_id(self, items):
        """The model the items ask for: one id for all (upstream's reads the first item's); an item
        without one: the first model of the conf."""
        ids = {self.default_id if i is None else i for i in items.ids}
        if len(ids) > 1:
            several = ", ".join(map(str, sorted(ids)))
            raise RequestError(400, f"the items ask for several models ({several}): "
                                    "send one request per model")
        model_id = ids.pop() if ids else self.default_id
        if model_id not in self.models:
            raise RequestError(404, f"no model with id {model_id} (models: "
                                    f"{', '.join(map(str, self.models))})")
        return model_id


def parse_items(body, opt):
    """The Items of a /translate body: [(src as one line, src as sent)], their ids in `.ids`;
    RequestError (400, 413) in one line for anything else."""
    from onmt.api import check_texts  # start-up time: onmt.api imports torch
    try:
        data = json.loads(body)
    except UnicodeDecodeError as e:
        raise RequestError(400, f"the body is not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise RequestError(400, f"malformed JSON: {e.msg} "
                                f"(line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise RequestError(400, "malformed JSON: nested too deeply") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise RequestError(400, 'expected a list of {"src": text, "id": model id}, '
                                f"got a JSON {type(data).__name__}")
    if len(data) > opt.max_request_lines:
        raise RequestError(413, f"{len(data)} items, more than -max_request_lines "
                                f"{opt.max_request_lines}")
    items, ids = [], []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or "src" not in item:
            raise RequestError(400, f'item {i} is not an object with a "src"')
        src, model_id = item["src"], item.get("id")
        if not isinstance(src, str):
            raise RequestError(400, f"item {i}: src must be a string, got {type(src).__name__}")
        if model_id is not None and (not isinstance(model_id, int) or isinstance(model_id, bool)):
            raise RequestError(400, f"item {i}: id must be an integer, got {model_id!r}")
        try:
            next(check_texts([src], start=i))
        except ValueError as e:
            raise RequestError(400, f"item {i}: {str(e).split(': ', 1)[-1]}") from None
        words = src.replace("\ufeff", " ").split()
        if len(words) > opt.max_src_words:
            raise RequestError(413, f"item {i}: src has {len(words)} words, more than "
                                    f"-max_src_words {opt.max_src_words}")
        items.append((" ".join(words), src))
        ids.append(model_id)
    return Items(items, ids)


class Items(list):
    """parse_items' list of (line, src), with the items' ids (`ids`, None where not given)."""

    def __init__(self, items, ids):
        super().__init__(items)
        self.ids = ids

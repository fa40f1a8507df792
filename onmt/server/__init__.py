"""onmt_server: summaries over HTTP with upstream OpenNMT-py's routes, JSON and conf.json, on
aiohttp (the `server` extra: pip install 'onmt-reinforced[server]').

    batching.py   the micro-batching queue (requests that arrive together decoded as one batch)
    models.py     conf.json -> ModelSpecs -> ServedModels (a Summarizer each, translate.py's path)
    app.py        the routes, the request checks, one-line JSON errors
    serve.py      start, listen, drain on SIGTERM

The entry point is onmt/bin/server.py; docs/user-guide.md, "Serving summaries", says how to use it.
Nothing here is imported by the rest of the toolkit.
"""

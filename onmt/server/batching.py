"""The server's micro-batching queue: the lines of requests that arrive together, decoded as one
batch.

    batcher = MicroBatcher(decode, max_lines=30, window=0.005, queue_lines=512)
    batcher.start()                                   # inside the running event loop
    results = await batcher.submit(lines, timeout=60)  # one result per line, from decode(lines)
    await batcher.drain()                             # refuse new requests, answer the queued ones

`decode(lines)` (a list of str -> a list of one result per line) runs in one worker thread, one
batch at a time. When a batch can start, the worker waits for company: until `window` seconds pass
without a new request (a burst of requests is gathered whole), at most MAX_WAIT windows after the
oldest arrived or the last batch ended, and not at all when the queued lines already fill a batch;
then it takes queued requests, oldest first, while their lines fit in `max_lines` (the first always:
a request of more lines is decoded alone). While a batch decodes, the requests arriving wait and go
together into the next one. With `per_request`, each request is decoded alone (upstream's server).
At most `queue_lines` lines wait: a request that would exceed it is refused at once (QueueFull). A
request not answered within its `timeout` gets TimedOut; if its batch has not started, its lines
are not decoded. A batch that fails is decoded again request by request: only the failing request
gets the exception.
No torch here: the queue is tested on its own (tests/unit/test_server_batching.py).
"""
import asyncio
import collections
import concurrent.futures

# a batch waits for company at most this many windows after its oldest request arrived (or the
# last batch ended)
MAX_WAIT = 4


class QueueFull(Exception):
    """The queue holds -queue_lines lines: the request is refused (503)."""


class TimedOut(Exception):
    """The request was not answered in time (503)."""


class Closed(Exception):
    """The server is stopping: no new request is accepted (503)."""


class _Request:
    __slots__ = ("lines", "future", "arrived", "dropped")

    def __init__(self, lines, future, arrived):
        self.lines, self.future, self.arrived, self.dropped = lines, future, arrived, False


class MicroBatcher:
    """See the module docstring. `stats()`: the batches decoded so far (counts and recent sizes)."""

    def __init__(self, decode, *, max_lines=30, window=0.005, queue_lines=512, per_request=False,
                 name="decode"):
        if max_lines <= 0 or queue_lines <= 0 or window < 0:
            raise ValueError("max_lines and queue_lines must be positive, window >= 0")
        self.decode, self.max_lines, self.window = decode, max_lines, window
        self.queue_lines, self.per_request, self.name = queue_lines, per_request, name
        self._queue = collections.deque()
        self._pending = 0             # lines queued, not yet taken into a batch
        self._last_arrival = 0.0
        self._free_since = 0.0        # when the last batch ended
        self._wake = None
        self._task = None
        self._closing = False
        self._executor = None
        self._counts = {"batches": 0, "requests": 0, "lines": 0, "largest_batch_requests": 0,
                        "largest_batch_lines": 0, "refused_full": 0, "timed_out": 0,
                        "decode_seconds": 0.0}
        self._recent = collections.deque(maxlen=64)   # (requests, lines) of the latest batches

    # ------------------------------------------------------------------ the callers' side
    def start(self):
        """Start the worker; call from inside the running event loop."""
        self._wake = asyncio.Event()
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=self.name)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def submit(self, lines, timeout=None):
        """The results of decode for `lines` (a list of str), in order; QueueFull, Closed, TimedOut
        (after `timeout` seconds; None or 0: no limit), or decode's own exception."""
        if self._closing:
            raise Closed("the server is stopping")
        if not lines:
            return []
        if self._pending + len(lines) > self.queue_lines:
            self._counts["refused_full"] += 1
            raise QueueFull(f"the queue is full ({self._pending} lines waiting, at most "
                            f"{self.queue_lines}): try again later")
        loop = asyncio.get_running_loop()
        request = _Request(list(lines), loop.create_future(), loop.time())
        self._queue.append(request)
        self._last_arrival = request.arrived
        self._pending += len(request.lines)
        self._wake.set()
        try:
            if timeout:
                return await asyncio.wait_for(asyncio.shield(request.future), timeout)
            return await request.future
        except asyncio.TimeoutError:
            request.dropped = True
            self._counts["timed_out"] += 1
            raise TimedOut(f"not answered within {timeout:g} s") from None
        except asyncio.CancelledError:
            request.dropped = True
            raise

    async def drain(self):
        """Refuse new requests (Closed), decode every queued one, then stop the worker."""
        self._closing = True
        if self._task is not None:
            self._wake.set()
            await self._task
            self._executor.shutdown(wait=True)
            self._task = None

    def pending_lines(self):
        return self._pending

    def stats(self):
        """{"batches", "requests", "lines", "largest_batch_requests", "largest_batch_lines",
        "refused_full", "timed_out", "decode_seconds" (in decode, summed), "queued_lines",
        "recent": [[requests, lines] of the latest batches]}."""
        return dict(self._counts, queued_lines=self._pending,
                    recent=[list(r) for r in self._recent])

    # ------------------------------------------------------------------ the worker
    async def _run(self):
        loop = asyncio.get_running_loop()
        while True:
            self._drop_front()
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            if not self.per_request:
                await self._gather(loop)
            batch = self._take()
            if batch:
                await self._decode(loop, batch)
                self._free_since = loop.time()

    async def _gather(self, loop):
        """Wait for company: until `window` passes without a new request, MAX_WAIT windows have
        passed since the oldest request arrived, or the queued lines fill a batch; both counted
        from the end of the last batch at the earliest (its clients, answered, come back then:
        the requests that waited during a batch do not leave without them)."""
        while self._pending < self.max_lines and not self._closing and self._queue:
            start = max(self._queue[0].arrived, self._free_since)
            remaining = min(max(self._last_arrival, self._free_since) + self.window,
                            start + MAX_WAIT * self.window) - loop.time()
            if remaining <= 0:
                return
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), remaining)
            except asyncio.TimeoutError:
                return

    def _drop_front(self):
        """Forget the requests at the front that gave up waiting (timed out, cancelled)."""
        while self._queue and self._queue[0].dropped:
            self._pending -= len(self._queue.popleft().lines)

    def _take(self):
        """The requests of the next batch, taken off the queue (the dropped ones left out)."""
        batch, lines = [], 0
        while self._queue:
            request = self._queue[0]
            if request.dropped:
                self._pending -= len(self._queue.popleft().lines)
                continue
            if batch and (self.per_request or lines + len(request.lines) > self.max_lines):
                break
            self._queue.popleft()
            self._pending -= len(request.lines)
            batch.append(request)
            lines += len(request.lines)
        return batch

    async def _decode(self, loop, batch, count=True):
        """Decode `batch` and answer its requests; when it fails, each request of a batch of
        several is decoded again alone, so that only the failing one hears of it."""
        lines = [line for request in batch for line in request.lines]
        if count:
            self._count(batch, len(lines))
        start = loop.time()
        try:
            results = await loop.run_in_executor(self._executor, self.decode, lines)
            self._counts["decode_seconds"] += loop.time() - start
            if len(results) != len(lines):
                raise RuntimeError(f"{self.name} gave {len(results)} results "
                                   f"for {len(lines)} lines")
        except Exception as e:   # the worker goes on
            if len(batch) > 1:
                for request in batch:
                    await self._decode(loop, [request], count=False)
                return
            if not batch[0].dropped and not batch[0].future.done():
                batch[0].future.set_exception(e)
            return
        start = 0
        for request in batch:
            n = len(request.lines)
            if not request.dropped and not request.future.done():
                request.future.set_result(results[start:start + n])
            start += n

    def _count(self, batch, n_lines):
        c = self._counts
        c["batches"] += 1
        c["requests"] += len(batch)
        c["lines"] += n_lines
        c["largest_batch_requests"] = max(c["largest_batch_requests"], len(batch))
        c["largest_batch_lines"] = max(c["largest_batch_lines"], n_lines)
        self._recent.append((len(batch), n_lines))

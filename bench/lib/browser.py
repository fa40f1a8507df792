"""Headless Chromium driven through its DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages,
each ended by a NUL byte, read by the browser on fd 3 and written on fd 4). No Python dependency, no port,
no network: the browser starts with a fresh profile and every background service off.

    path = find_chromium()                # None: no browser on this machine (tests skip)
    with Browser(path, width=1280, height=800) as b:
        b.navigate("file:///tmp/page.html", ready="document.body.dataset.ready")
        b.evaluate("document.title"); b.hover("#id"); b.key("j"); png = b.screenshot()
        b.requests()                      # every URL the page asked for (Network.requestWillBeSent)
        b.distinct_colours(png)           # how many colours the screenshot has (drawn on a canvas)
"""
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
         "--remote-debugging-pipe")


def find_chromium():
    """The browser to drive: $CHROMIUM, else the first of NAMES on the PATH; None when there is none."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else shutil.which(env)
    return next((p for p in map(shutil.which, NAMES) if p), None)


class Browser:
    def __init__(self, path, width=1280, height=800, timeout=60):
        self.timeout, self._id, self._buf, self.events = timeout, 0, b"", []
        self.profile = tempfile.mkdtemp(prefix="explore-chromium-")
        child_in, self._w = os.pipe()
        self._r, child_out = os.pipe()

        def fds_3_and_4():               # in the child: the pipe ends on 3 and 4, kept across exec
            a = fcntl.fcntl(child_in, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(child_out, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, close_fds=False, preexec_fn=fds_3_and_4)
        os.close(child_in)
        os.close(child_out)
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Network", "Runtime"):
                self.page(f"{domain}.enable")
            self.resize(width, height)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ the protocol
    def _message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError(f"no answer from Chromium in {self.timeout} s")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium exited (log: {self.log.name})")
            self._buf += chunk
        text, _, self._buf = self._buf.partition(b"\0")
        return json.loads(text)

    def call(self, method, params=None, session=None):
        """Send one command (to the page's session when given) and return its result."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def page(self, method, params=None):
        return self.call(method, params, self.session)

    # ------------------------------------------------------------------ what tests and benchmarks do
    def resize(self, width, height):
        self.page("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def evaluate(self, expression):
        """The value of a JavaScript expression (a promise is awaited); a thrown error raises."""
        r = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def navigate(self, url, ready="true", timeout=None):
        """Load `url` and wait until the expression `ready` is truthy; the seconds it took."""
        self.events.clear()
        start = time.monotonic()
        self.page("Page.navigate", {"url": url})
        deadline = start + (timeout or self.timeout)
        while not self.evaluate(f"document.readyState !== 'loading' && !!({ready})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: not ready ({ready}) in {timeout or self.timeout} s")
            time.sleep(0.01)
        return time.monotonic() - start

    def requests(self):
        """The URLs the page asked for since the last navigate."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def hover(self, selector):
        """Move the mouse onto the centre of the element `selector` (scrolled into view first)."""
        box = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView("
                            "{block: 'center'}); const r = e.getBoundingClientRect(); "
                            "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        self.page("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": box[0], "y": box[1]})

    def key(self, key):
        """Press and release a printable key (`j`, `/`) on the focused element."""
        for kind in ("keyDown", "keyUp"):
            self.page("Input.dispatchKeyEvent", {"type": kind, "key": key, "text": key if kind == "keyDown" else "",
                                                 "code": f"Key{key.upper()}" if key.isalpha() else ""})

    def screenshot(self, path=None):
        png = base64.b64decode(self.page("Page.captureScreenshot", {"format": "png"})["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png

    def distinct_colours(self, png, limit=64):
        """How many colours the PNG holds (up to `limit`), counted on a canvas in the current page."""
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        return self.evaluate(f"""new Promise((ok, fail) => {{ const img = new Image(); img.onerror = fail;
            img.onload = () => {{ const c = document.createElement('canvas'); c.width = img.width;
              c.height = img.height; const g = c.getContext('2d'); g.drawImage(img, 0, 0);
              const d = new Uint32Array(g.getImageData(0, 0, c.width, c.height).data.buffer); const seen = new Set();
              for (let i = 0; i < d.length && seen.size < {limit}; i += 7) seen.add(d[i]); ok(seen.size); }};
            img.src = {json.dumps(url)}; }})""")

    def close(self):
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close")
                except (OSError, RuntimeError, TimeoutError):
                    pass
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._r, self._w):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.log.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

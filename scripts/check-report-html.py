#!/usr/bin/env python3
"""Opens a storage-bench HTML report in headless Chromium and checks that it rendered.

    scripts/check-report-html.py results/smoke.html --csv results/smoke.csv [--screenshot docs/report.png]
    scripts/check-report-html.py results/ci-load.html --load-csv results/ci-load.csv

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe),
so nothing beyond Python's standard library and Debian's chromium is needed
(scripts/setup.sh browser). It fails (exit 1, each problem printed) when:
- the page is larger than 2 MB, or loads anything besides itself;
- the page logs any console message, page error or browser error while it
  loads (the page has no script, so any message is a fault);
- a chart (figure.chart) has no SVG of non-zero size, or a backend its
  data-backends names has no mark of non-zero size in it; with --csv: a
  throughput chart does not draw every backend the CSV has for that size,
  durability and operation, or the backend × operation matrix misses one, or
  a per-call operation's latency spectrum or distribution misses a backend
  whose row has a spectrum; with --load-csv (a load run's report): per mix,
  the throughput-against-clients chart, the p99 chart, and the spectrum and
  distribution at each client count do not draw every backend that ran it;
- a screenshot of the whole page is blank (almost all one colour), or a
  backend's colour (its swatch's, as the browser computed it) is absent from
  the charts (the swatches themselves are hidden for this check).

Before it checks the report it checks itself: a page that logs a console error
must be caught, and a blank page must be called blank; otherwise the check could
not fail, and it says so. Exit status 0 when the report is sound, 1 otherwise,
2 without chromium.
"""
import argparse
import base64
import csv
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SIZE_LIMIT = 2_000_000


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """Headless Chromium over the DevTools protocol on a pipe: commands on the
    child's fd 3, replies and events on its fd 4, each a JSON message ended by
    a NUL byte."""

    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="report-check-profile-")
        to_child_read, self.to_child = os.pipe()
        self.from_child, from_child_write = os.pipe()

        def wire():
            # dup2 onto the same number keeps close-on-exec: clear it explicitly.
            for source, target in ((to_child_read, 3), (from_child_write, 4)):
                if source != target:
                    os.dup2(source, target)
                os.set_inheritable(target, True)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(to_child_read)
        os.close(from_child_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    def send(self, method, params=None, session=False):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_child, json.dumps(message).encode() + b"\0")
        return self.next_id

    def receive(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=False, timeout=60):
        wanted = self.send(method, params, session)
        while True:
            message = self.receive(timeout)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, timeout=60):
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            message = self.receive(timeout)
            if message.get("method") == method:
                return message
            self.events.append(message)

    def open(self, url, width=1280, height=900):
        """Loads url; returns the console messages and errors logged meanwhile."""
        self.events = []
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_for("Page.loadEventFired")
        self.evaluate("1")  # a round trip, so that what was logged during the load has arrived
        return self.console()

    def console(self):
        messages = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                messages.append(f"console.{params.get('type')}: {text}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                messages.append(f"page error: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Log.entryAdded":
                entry = params.get("entry", {})
                if entry.get("level") in ("error", "warning"):
                    messages.append(f"log {entry.get('level')}: {entry.get('text')} {entry.get('url', '')}")
        return messages

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path, width=1280, height=None, top=0):
        """The whole page, or `height` pixels of it from `top` down, as a PNG."""
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        page = int(size["height"])
        full = page - top if height is None else min(height, page - top)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": page, "deviceScaleFactor": 1, "mobile": False}, session=True)
        shot = self.call("Page.captureScreenshot",
                         {"format": "png", "clip": {"x": 0, "y": top, "width": width, "height": full, "scale": 1},
                          "captureBeyondViewport": True}, session=True)
        with open(path, "wb") as file:
            file.write(base64.b64decode(shot["data"]))

    def close(self):
        try:
            self.send("Browser.close")
            self.process.wait(timeout=20)
        except Exception:
            self.process.kill()
            self.process.wait()
        os.close(self.to_child)
        os.close(self.from_child)
        shutil.rmtree(self.profile, ignore_errors=True)


# Run in the page: each chart, its SVG's size, and which of the backends it
# names have a mark of non-zero size; the matrix's rows; the colour of each
# backend's swatch; what the page loaded besides itself.
INSPECT = r"""(() => {
  const charts = [...document.querySelectorAll('figure.chart')].map(figure => {
    const svg = figure.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const names = (figure.dataset.backends || '').split(',').filter(x => x);
    const drawn = names.filter(name => [...figure.querySelectorAll('[data-backend]')]
      .filter(mark => mark.dataset.backend === name)
      .some(mark => [...mark.querySelectorAll('rect,path,circle')].some(shape => {
        const b = shape.getBBox(); return b.width > 0 || b.height > 0; })));
    return {id: figure.id, svg: !!svg, width: box.width, height: box.height, backends: names, drawn: drawn};
  });
  const matrix = [...document.querySelectorAll('table.matrix tr[data-backend]')].map(row => row.dataset.backend);
  const colours = {};
  for (const swatch of document.querySelectorAll('.swatch')) {
    const name = (swatch.parentElement.textContent || '').trim().split(/\s+/)[0];
    if (name && !(name in colours)) colours[name] = getComputedStyle(swatch).backgroundColor;
  }
  const loaded = performance.getEntriesByType('resource').map(entry => entry.name);
  return {charts, matrix, colours, loaded};
})()"""


def read_png(path):
    """(width, height, channels, rows) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    with open(path, "rb") as file:
        data = file.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    position = 8
    idat = b""
    width = height = depth = colour_type = interlace = None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if depth != 8 or colour_type not in (2, 6) or interlace != 0:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {colour_type}, interlace {interlace})")
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    rows = []
    offset = 0
    for _ in range(height):
        kind = raw[offset]
        line = bytearray(raw[offset + 1:offset + 1 + stride])
        offset += 1 + stride
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            line = bytearray((x + y) & 255 for x, y in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def colour_counts(path):
    """The number of pixels, and how many there are of each RGB colour."""
    width, height, channels, rows = read_png(path)
    counts = {}
    for line in rows:
        for i in range(0, len(line), channels):
            key = line[i:i + 3]
            counts[key] = counts.get(key, 0) + 1
    return width * height, counts


def near(counts, rgb, tolerance=6):
    """Pixels within `tolerance` of `rgb` in each channel."""
    return sum(
        n for key, n in counts.items()
        if abs(key[0] - rgb[0]) <= tolerance and abs(key[1] - rgb[1]) <= tolerance and abs(key[2] - rgb[2]) <= tolerance
    )


def blank(total, counts):
    """Blank: one colour covers 99.5% of the page, or it has fewer than 8 colours."""
    return max(counts.values()) > 0.995 * total or len(counts) < 8


def self_test(browser, directory):
    """The checks must be able to fail: a console error is seen, a blank page is blank."""
    problems = []
    faulty = os.path.join(directory, "faulty.html")
    with open(faulty, "w") as file:
        file.write("<!DOCTYPE html><title>t</title><script>console.error('planted fault')</script><p>x</p>")
    if not any("planted fault" in message for message in browser.open("file://" + faulty)):
        problems.append("self-test: a page that logs a console error was not caught; the console check cannot fail")
    empty = os.path.join(directory, "empty.html")
    with open(empty, "w") as file:
        file.write("<!DOCTYPE html><title>t</title><body style='background:#fff'></body>")
    browser.open("file://" + empty, height=300)
    shot = os.path.join(directory, "empty.png")
    browser.screenshot(shot, width=400, height=300)
    total, counts = colour_counts(shot)
    if not blank(total, counts):
        problems.append("self-test: a blank page was not called blank; the screenshot check cannot fail")
    return problems


def expected_backends(csv_path):
    """(size-durability, operation) -> the backends with a row, from the CSV."""
    expected = {}
    with open(csv_path, newline="") as file:
        for row in csv.DictReader(file):
            key = (f"{row['dialogs']}x{row['messages_per_dialog']}-{row['durability']}", row["operation"])
            expected.setdefault(key, set()).add(row["backend"])
    return expected


def slug(name):
    """The HTML report's id fragment of a name (HTMLReport.slug)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", name)


def expected_load(csv_path):
    """chart id -> the backends it must draw, from a load report's 'all' rows that ran."""
    expected = {}
    with open(csv_path, newline="") as file:
        for row in csv.DictReader(file):
            if row["operation"] != "all" or int(row["operations"]) <= 0:
                continue
            mix, backend, clients = slug(row["mix"]), row["backend"], row["clients"]
            for chart in (f"load-throughput-{mix}", f"load-p99-{mix}"):
                expected.setdefault(chart, set()).add(backend)
            if row.get("latency_spectrum_us"):
                for chart in (f"load-spectrum-{mix}-c{clients}", f"load-cdf-{mix}-c{clients}"):
                    expected.setdefault(chart, set()).add(backend)
    return expected


def expected_spectra(csv_path):
    """chart id -> backends, for the per-call operations' spectra and distributions of a run's report."""
    expected = {}
    with open(csv_path, newline="") as file:
        for row in csv.DictReader(file):
            if not row.get("latency_spectrum_us") or row.get("error"):
                continue
            group = f"{row['dialogs']}x{row['messages_per_dialog']}-{row['durability']}"
            for kind in ("spectrum", "cdf"):
                expected.setdefault(f"{kind}-{group}-{row['operation']}", set()).add(row["backend"])
    return expected


def rgb_of(css):
    match = re.match(r"rgba?\((\d+),\s*(\d+),\s*(\d+)", css or "")
    return tuple(int(x) for x in match.groups()) if match else None


def missing_marks(charts, expected):
    """A problem for each expected chart that is absent or does not draw one of its backends."""
    problems = []
    for chart_id, backends in sorted(expected.items()):
        chart = charts.get(chart_id)
        if chart is None:
            problems.append(f"no chart {chart_id}")
            continue
        for backend in sorted(backends - set(chart["drawn"])):
            problems.append(f"chart {chart_id} does not draw {backend}")
    return problems


def check(browser, args, directory):
    problems = []
    path = os.path.abspath(args.report)
    size = os.path.getsize(path)
    if size > SIZE_LIMIT:
        problems.append(f"{args.report}: {size} bytes, more than {SIZE_LIMIT}")
    url = "file://" + path
    for message in browser.open(url):
        problems.append(message)
    page = browser.evaluate(INSPECT)
    for item in page["loaded"]:
        problems.append(f"the page loaded {item}")
    if not page["charts"]:
        problems.append("the page has no chart")
    for chart in page["charts"]:
        if not chart["svg"] or chart["width"] <= 0 or chart["height"] <= 0:
            problems.append(f"chart {chart['id']}: no SVG of non-zero size")
        if not chart["backends"]:
            problems.append(f"chart {chart['id']}: names no backend")
        for backend in chart["backends"]:
            if backend not in chart["drawn"]:
                problems.append(f"chart {chart['id']}: nothing drawn for {backend}")
    if args.csv:
        expected = expected_backends(args.csv)
        charts = {chart["id"]: chart for chart in page["charts"]}
        for (group, operation), backends in sorted(expected.items()):
            chart = charts.get(f"throughput-{group}-{operation}")
            if chart is None:
                problems.append(f"no throughput chart for {operation} at {group}")
                continue
            for backend in sorted(backends - set(chart["drawn"])):
                problems.append(f"the throughput chart of {operation} at {group} does not draw {backend}")
        every = set().union(*expected.values()) if expected else set()
        for backend in sorted(every - set(page["matrix"])):
            problems.append(f"the backend × operation matrix has no row for {backend}")
        problems += missing_marks(charts, expected_spectra(args.csv))
    if args.load_csv:
        expected = expected_load(args.load_csv)
        if not expected:
            problems.append(f"{args.load_csv}: no load run that ran")
        problems += missing_marks({chart["id"]: chart for chart in page["charts"]}, expected)

    shot = os.path.join(directory, "page.png")
    browser.screenshot(shot)
    total, counts = colour_counts(shot)
    if blank(total, counts):
        problems.append("the screenshot is blank")
    # The colours must come from the charts: the swatches are hidden for this screenshot.
    browser.evaluate("document.head.insertAdjacentHTML('beforeend', '<style>.swatch{visibility:hidden}</style>')")
    charts_only = os.path.join(directory, "charts.png")
    browser.screenshot(charts_only)
    _, chart_counts = colour_counts(charts_only)
    for backend, css in sorted(page["colours"].items()):
        rgb = rgb_of(css)
        if rgb is None or near(chart_counts, rgb) < 20:
            problems.append(f"no chart shows {backend}'s colour {css}")
    print(f"check-report-html: {args.report}: {size} bytes, {len(page['charts'])} charts, "
          f"{len(page['colours'])} backend colours, {len(counts)} colours on a {total}-pixel screenshot")
    if args.screenshot:
        browser.open(url)
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        browser.screenshot(os.path.abspath(args.screenshot), height=args.screenshot_height)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="the HTML report")
    parser.add_argument("--csv", help="the CSV the report was made from: each of its backends must be drawn")
    parser.add_argument("--load-csv", help="the load report (CSV) the page was made from: each backend of each mix must be drawn")
    parser.add_argument("--screenshot", help="also keep a screenshot of the page's top here (e.g. docs/report.png)")
    parser.add_argument("--screenshot-height", type=int, default=2400, help="that screenshot's height in pixels")
    args = parser.parse_args()

    for path in [args.report, args.csv, args.load_csv]:
        if path and not os.path.exists(path):
            print(f"check-report-html: {path}: no such file (make bench-smoke writes results/smoke.*; "
                  ".ci/run's load run writes results/ci-load.*)", file=sys.stderr)
            return 1
    chromium = find_chromium()
    if not chromium:
        print("check-report-html: no chromium on PATH; install it with scripts/setup.sh browser", file=sys.stderr)
        return 2
    browser = Browser(chromium)
    try:
        with tempfile.TemporaryDirectory(prefix="report-check-") as directory:
            problems = self_test(browser, directory)
            problems += check(browser, args, directory)
    finally:
        browser.close()
    for problem in problems:
        print(f"check-report-html: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Makes the README's two pictures of `make bench`'s output from committed results.

    scripts/readme-images.py [--run results/baseline.csv] [--load results/baseline-load.csv]

- docs/screen.png: the one-screen summary `storage-bench report RUN --load LOAD`
  prints (what `make bench` prints for that run and load phase), drawn as
  terminal text;
- docs/report.png: the top of the HTML report of the same rows (what `make
  bench` writes to results/report.html), after the page passed
  scripts/check-report-html.py with both CSVs;
- docs/report-load.png: the same page's load section, from its top.

Both are screenshots taken by headless Chromium (scripts/setup.sh browser);
storage-bench must be built in release (make bench-release).
"""
import argparse
import html
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def checker():
    spec = importlib.util.spec_from_file_location("check_report_html", os.path.join(HERE, "check-report-html.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="results/baseline.csv")
    parser.add_argument("--load", default="results/baseline-load.csv")
    parser.add_argument("--page-height", type=int, default=2600)
    args = parser.parse_args()
    os.chdir(ROOT)
    check = checker()
    chromium = check.find_chromium()
    if not chromium:
        print("readme-images: no chromium on PATH; install it with scripts/setup.sh browser", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="readme-images-") as directory:
        page = os.path.join(directory, "report.html")
        bench = ["swift", "run", "--package-path", "Benchmarks", "-c", "release", "--skip-build", "storage-bench"]
        screen = subprocess.run(
            bench + ["report", args.run, "--load", args.load, "--output", page],
            check=True, capture_output=True, text=True).stdout
        lines = screen.rstrip("\n").split("\n")
        widest = max(len(line) for line in lines)
        print(f"readme-images: the screen has {len(lines)} lines, the widest {widest} columns")
        # The page must pass the same checks as CI's before it is pictured.
        status = subprocess.run(
            [sys.executable, os.path.join(HERE, "check-report-html.py"), page, "--csv", args.run,
             "--load-csv", args.load, "--screenshot", "docs/report.png",
             "--screenshot-height", str(args.page_height)]).returncode
        if status != 0:
            print("readme-images: the page failed its checks; docs/report.png not trusted", file=sys.stderr)
            return status
        terminal = os.path.join(directory, "screen.html")
        with open(terminal, "w", encoding="utf-8") as file:
            file.write(
                "<!DOCTYPE html><meta charset='utf-8'><style>body{margin:0;background:#1e1e1e}"
                "pre{margin:0;padding:12px 14px;color:#e6e6e6;font:13px/1.35 'DejaVu Sans Mono',monospace}</style>"
                f"<pre>$ storage-bench report {html.escape(args.run)} --load {html.escape(args.load)}\n"
                f"{html.escape(screen)}</pre>")
        browser = check.Browser(chromium)
        try:
            browser.open("file://" + page)
            top = browser.evaluate("document.getElementById('load').getBoundingClientRect().top + window.scrollY")
            browser.screenshot(os.path.join(ROOT, "docs", "report-load.png"), height=args.page_height, top=int(top))
            # 100 columns of 13 px DejaVu Sans Mono (7.83 px each) and the padding.
            browser.open("file://" + terminal, width=820, height=400)
            browser.screenshot(os.path.join(ROOT, "docs", "screen.png"), width=820)
        finally:
            browser.close()
    print("readme-images: wrote docs/screen.png, docs/report.png, docs/report-load.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Crawl one local site with `crawl` and with spider-rs, alternately, and
print the medians (issue 28: CPU per site page against the fastest Rust
crawler).

    spider_compare.py --crawl BIN --spider BIN --site DIR [--rounds 5]
                      [--concurrency 32] [--per-host 8] [--set KEY=VALUE ...]

`--crawl` and `--spider` may be given several times as NAME=BIN (a build
before and after a change, spider's default and fastest builds): every
contender runs once per round, in a rotated order.

nginx serves DIR on a free 127.0.0.1 port with directory listings on, so
that every page of the site is reachable from `/` for both crawlers whatever
its own links are. Both get the same concurrency, no delay and no robots.txt
(the site has none). `crawl` runs with everything on (all three tiers, the
template learner, the redb state on disk), with `--fresh` each time; spider
only gathers links. CPU is each crawler process's own (user + system, from
the kernel's accounting of the waited child), never nginx's.

"CPU per site page" divides by the number of HTML pages the site has (its
.html files and its directory listings), the same for both crawlers:
a crawler that fetches more URLs than the site has pages pays for them.
"""

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(site, work):
    port = free_port()
    os.makedirs(os.path.join(work, "tmp"), exist_ok=True)
    mime = "include /etc/nginx/mime.types;" if os.path.exists("/etc/nginx/mime.types") else ""
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = f"""{user}daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 1024; }}
http {{
  {mime}
  default_type application/octet-stream;
  access_log off;
  client_body_temp_path {work}/tmp;
  server {{
    listen 127.0.0.1:{port} backlog=1024;
    root {site};
    autoindex on;
  }}
}}
"""
    with open(os.path.join(work, "nginx.conf"), "w") as f:
        f.write(conf)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-c", os.path.join(work, "nginx.conf"), "-p", work])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"nginx did not start on port {port}: see {work}/error.log")


def site_pages(site):
    """HTML pages a complete crawl of the site fetches: its .html files and
    one listing per directory."""
    n = 0
    for _, _, files in os.walk(site):
        n += 1 + sum(1 for f in files if f.endswith((".html", ".htm")))
    return n


def run_child(cmd, **kw):
    """Runs cmd, returns (completed process, CPU seconds of that child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return p, cpu, wall


def run_crawl(args, binary, base, work):
    out, data = os.path.join(work, "out"), os.path.join(work, "data")
    seeds = os.path.join(work, "seeds.txt")
    with open(seeds, "w") as f:
        f.write(base + "\n")
    cmd = [binary, "--seeds", seeds, "--out", out, "--data-dir", data, "--fresh",
           "--concurrency", str(args.concurrency),
           "--set", f"fetch.concurrency={args.concurrency}",
           "--set", f"fetch.per_host_concurrency={args.per_host}",
           "--set", "fetch.per_host_delay_ms=0",
           "--set", "fetch.autothrottle=off",
           "--set", "fetch.respect_robots=false",
           "--set", "crawl.max_depth=64"]
    for s in args.set:
        cmd += ["--set", s]
    _, cpu, wall = run_child(cmd, env={**os.environ, "RUST_LOG": "warn"})
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    return {"fetched": stats["fetched"], "kept": stats["kept"],
            "dups": stats["dup_title"] + stats["dup_content"], "cpu_s": cpu, "wall_s": wall}


def run_spider(args, binary, base):
    p, cpu, wall = run_child([binary, base + "/", str(args.concurrency)])
    line = json.loads(p.stdout.strip().splitlines()[-1])
    return {"fetched": line["pages"], "cpu_s": cpu, "wall_s": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crawl", action="append", required=True, help="BIN or NAME=BIN")
    ap.add_argument("--spider", action="append", required=True, help="BIN or NAME=BIN")
    ap.add_argument("--site", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--set", action="append", default=[], help="extra crawl setting, KEY=VALUE")
    args = ap.parse_args()
    site = os.path.realpath(args.site)
    if not os.path.isdir(site):
        sys.exit(f"--site {args.site}: not a directory")
    pages = site_pages(site)
    work = tempfile.mkdtemp(prefix="spider-compare-")
    nginx, port = start_nginx(site, work)
    base = f"http://127.0.0.1:{port}"
    def named(values, kind):
        out = []
        for i, v in enumerate(values):
            name, _, path = v.rpartition("=")
            out.append((name or (kind if len(values) == 1 else f"{kind}{i + 1}"), kind, path))
        return out
    contenders = named(args.crawl, "crawl") + named(args.spider, "spider")
    rows = {name: [] for name, _, _ in contenders}
    try:
        # Warm the page cache (and nginx) once, untimed.
        run_spider(args, contenders[-1][2], base)
        for r in range(args.rounds):
            k = r % len(contenders)
            for name, kind, path in contenders[k:] + contenders[:k]:
                res = run_crawl(args, path, base, work) if kind == "crawl" else run_spider(args, path, base)
                res["ms_per_site_page"] = 1000 * res["cpu_s"] / pages
                res["site_pages_per_s"] = pages / res["wall_s"]
                rows[name].append(res)
                print(json.dumps({"round": r + 1, "who": name, **res}), flush=True)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nsite: {site} ({pages} HTML pages: .html files + directory listings), "
          f"{args.rounds} alternating rounds, concurrency {args.concurrency}")
    print("| crawler | fetched (median) | site pages/s (median) | CPU ms per site page (median) | runs |")
    print("|---|---|---|---|---|")
    for who, rs in rows.items():
        med = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
        runs = " / ".join(f"{x['ms_per_site_page']:.3f}" for x in rs)
        print(f"| {who} | {med('fetched'):.0f} | {med('site_pages_per_s'):,.0f} | "
              f"{med('ms_per_site_page'):.3f} | {runs} |")
    med = {name: statistics.median(x["ms_per_site_page"] for x in rs) for name, rs in rows.items()}
    crawls = [n for n, kind, _ in contenders if kind == "crawl"]
    spiders = [n for n, kind, _ in contenders if kind == "spider"]
    for c in crawls:
        for sp in spiders:
            print(f"{c} / {sp} CPU per site page: {med[c] / med[sp]:.2f}")

if __name__ == "__main__":
    main()

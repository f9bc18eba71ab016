#!/usr/bin/env bash
# Times `crawl report` over a generated output directory of N lines (default
# 1,000,000: 40% kept with 2 KB of text each, 50% duplicates in clusters of
# varied size over 50 hosts, 10% errors), median of 3 runs. Prints the
# numbers docs/BENCHMARKS.md quotes.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
DIR=${REPORT_BENCH_DIR:-target/report-bench}
cargo build --release -p simcrawl
mkdir -p "$DIR"
if [ "$(cat "$DIR/.lines" 2>/dev/null)" != "$N" ]; then
  python3 - "$DIR" "$N" <<'PY'
import json, random, sys
out, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
text = "长江流域遭遇罕见高温干旱 多地启动抗旱应急响应 " * 40
kept_n, dup_n = n * 4 // 10, n // 2
err_n = n - kept_n - dup_n
with open(f"{out}/kept.jsonl", "w") as f:
    for i in range(kept_n):
        f.write(json.dumps({"url": f"http://h{i % 50}.test/p/{i}.html", "final_url": f"http://h{i % 50}.test/p/{i}.html",
                            "status": 200, "title": f"page {i}", "text": text, "simhash": "c1c9268f2d940ca1",
                            "depth": 3, "fetched_at": 1_795_000_000 + i // 500}, ensure_ascii=False) + "\n")
with open(f"{out}/duplicates.jsonl", "w") as f:
    for j in range(dup_n):
        k = int(rnd.paretovariate(1.2)) % kept_n
        h = k % 50
        url = rnd.choice([f"http://h{h}.test//p/{k}.html", f"http://h{h}.test/p/{k}.html?sid={j}", f"http://m{j % 7}.test/copy/{j}.html"])
        f.write(json.dumps({"url": url, "tier": rnd.choice(["url", "title", "content", "content"]),
                            "duplicate_of": f"http://h{h}.test/p/{k}.html", "distance": rnd.randint(0, 12),
                            "similarity": round(rnd.uniform(0.75, 1.0), 3)}) + "\n")
with open(f"{out}/errors.jsonl", "w") as f:
    for e in range(err_n):
        f.write(json.dumps({"url": f"http://h{e % 50}.test/e/{e}", "kind": rnd.choice(["timeout", "http_status", "robots_disallowed"]),
                            "error": "failed"}) + "\n")
PY
  echo "$N" >"$DIR/.lines"
fi
du -sh "$DIR"
python3 - "$DIR" "$N" <<'PY'
import statistics, subprocess, sys, time
d, n = sys.argv[1], int(sys.argv[2])
runs = []
for _ in range(3):
    t0 = time.perf_counter()
    subprocess.run(["target/release/crawl", "report", d], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs.append(time.perf_counter() - t0)
print(f"crawl report over {n:,} lines: median {statistics.median(runs):.2f} s (runs: {', '.join(f'{r:.2f}' for r in runs)})")
PY
ls -la "$DIR/report.html"

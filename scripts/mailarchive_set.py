#!/usr/bin/env python3
"""Build simcrawl's mailing-list archive set (issue 35, "a gate per genre":
forums, Q&A or mailing-list archives, where messages quote each other) in
the HTML gate's format: real mail rendered by a real archiver, and the
exact resemblance of every pair of pages.

Called by scripts/build-mailarchive-set.sh, which fetches notmuch's source
package from Debian (its test corpora are real mail: threads of the Linux
kernel's lists and of the notmuch list, replies quoting each other, patches
and their reviews) and installs MHonArc and public-inbox.  See
docs/eval-mailarchive.md.

Archives (what the genre looks like on the web):
  LIST.lists.test  one archive per list (linux-kernel, linux-cifs, notmuch,
                   ...), MHonArc's usual layout (the one lists.debian.org
                   uses): headers, body, follow-ups, references, prev/next
                   by date and by thread.  A message sent to three lists is
                   in three archives: a real copy.
  mirror.test      every list again, another layout: a banner, the thread
                   around the message (MHonArc's thread slice, so the chrome
                   changes from page to page), the body, a footer.
  lore.test        every list again as public-inbox (lore.kernel.org's
                   archiver) shows it: lore.test/LIST/index.html and one
                   page per message, the header block and body in one
                   <pre>, then the thread's overview and reply
                   instructions after an <hr> (thread views not fetched).
Each MHonArc archive has date and thread index pages of 40 messages
(seeds: the first of each; on lore.test each inbox's index).  Links
leaving the set point to "#".

Labels (both by scripts/eval_set.py's truth: character 5-grams after NFKC,
OpenCC t2s, lower case, letters and digits only; near >= 0.8):
  pairs.jsonl           the whole visible text of each page;
  message_pairs.jsonl   the message as the archive shows it (the body region
                        MHonArc marks; index pages: their whole text);
  combined_pairs.jsonl  what the gate scores by: two message pages by their
                        message, a pair with an index page by the whole page
                        (the news set's rule, scripts/news_set.py).
Replies that quote most of what they answer and add a line are near by
these labels; replies that quote a part are ambiguous or distinct, and a
drop of one for its parent is a false drop.
"""

import argparse
import email
import email.policy
import email.utils
import html as h
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import apiref_set as ar
import eval_set as es
import html_gate  # noqa: F401  (registers es.TEMPLATES["none"]: nothing is template)
import news_set as ns
from spider_compare import free_port

CORPORA = ("lkml", "default")
IDXSIZE = 40
GMANE = "public.gmane.org"

LIST_RC = """<MULTIPG>
<IDXSIZE>
{idx}
</IDXSIZE>
<TITLE>
{name} archive: messages by date
</TITLE>
<TTITLE>
{name} archive: threads
</TTITLE>
<MSGPGBEGIN>
<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
<html>
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>$SUBJECTNA$</title>
</head>
<body>
<p><a href="maillist.html">{name}</a> mailing list archive</p>
</MSGPGBEGIN>
"""

MIRROR_RC = """<MULTIPG>
<IDXSIZE>
{idx}
</IDXSIZE>
<TITLE>
Mail Mirror: every list by date
</TITLE>
<TTITLE>
Mail Mirror: every list by thread
</TTITLE>
<TSLICE>
4:4:0
</TSLICE>
<FIELDORDER>
from
subject
date
</FIELDORDER>
<MSGPGBEGIN>
<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>$SUBJECTNA$ - Mail Mirror</title>
</head>
<body>
<div class="banner"><a href="maillist.html">Mail Mirror</a>: public mailing
lists, mirrored and searchable. <a href="threads.html">Threads</a> |
<a href="maillist.html">Dates</a></div>
</MSGPGBEGIN>
<TOPLINKS>
<div class="around"><h3>Around this message</h3>
$TSLICE$
</div>
</TOPLINKS>
<BOTLINKS>
<p>[<a href="$IDXFNAME$#$MSGNUM$">date index</a>]
[<a href="$TIDXFNAME$#$MSGNUM$">thread index</a>]</p>
</BOTLINKS>
<MSGPGEND>
<div class="footer"><p>Mail Mirror keeps copies of public mailing lists so
that their discussions stay readable when the original archives move. The
messages are the work of their authors; write to the list, not to us.</p>
</div>
</body>
</html>
</MSGPGEND>
"""

BODY = re.compile(r"<!--X-Body-of-Message-->(.*?)<!--X-Body-of-Message-End-->", re.S)
HREF = re.compile(r'(href|src)="([^"]*)"', re.I)
LIST_ID = re.compile(r"<([A-Za-z0-9_.-]+?)\.[A-Za-z0-9-]+\.[A-Za-z0-9.-]+>")


def read_corpus(root):
    """[(corpus, path, message)] of every message, first copy of each
    Message-ID only (the corpora share a few), in path order."""
    out, seen = [], set()
    for corpus in CORPORA:
        top = os.path.join(root, corpus)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    raw = f.read()
                msg = email.message_from_bytes(raw, policy=email.policy.compat32)
                mid = (msg.get("Message-ID") or "").strip()
                if not mid or mid in seen:
                    continue
                seen.add(mid)
                out.append((corpus, path, raw, msg))
    return out


def list_of_id(value):
    m = LIST_ID.search(value or "")
    return m.group(1).lower() if m else None


def lists_of(msg, known, corpus):
    """The lists a message reached: its List-ID and every known list in To
    and Cc (gmane writes linux-cifs@... as linux-cifs-HASH@public.gmane.org)."""
    found = set()
    own = list_of_id(msg.get("List-ID") or msg.get("List-Id"))
    if own:
        found.add(own)
    for _, addr in email.utils.getaddresses(msg.get_all("To", []) + msg.get_all("Cc", [])):
        local, _, domain = addr.lower().partition("@")
        if domain == GMANE and "-" in local:
            local = local.rsplit("-", 1)[0]
        if local in known:
            found.add(local)
    if not found:
        found.add("notmuch" if corpus == "default" else "linux-kernel")
    return sorted(found)


DERIVED = re.compile(r"<!--X-Derived: (\S+) -->")


def neutralize(page):
    """Every link that leaves the archive points to "#"; the random names
    MHonArc gives saved attachments become attachment-N (two builds write
    the same files)."""
    for n, name in enumerate(dict.fromkeys(DERIVED.findall(page)), 1):
        page = page.replace(name, f"attachment-{n}{os.path.splitext(name)[1]}")

    def fix(m):
        url = m.group(2)
        inside = not re.match(r"[a-z][a-z0-9+.-]*:|//", url, re.I)
        return m.group(0) if inside else f'{m.group(1)}="#"'
    return HREF.sub(fix, page)


def render(messages, rc_text, workdir):
    """MHonArc over an MH folder of the messages: {file name: html}."""
    src = os.path.join(workdir, "mh")
    out = os.path.join(workdir, "out")
    os.makedirs(src)
    os.makedirs(out)
    for i, raw in enumerate(messages, 1):
        with open(os.path.join(src, str(i)), "wb") as f:
            f.write(raw)
    rc = os.path.join(workdir, "archive.mrc")
    with open(rc, "w", encoding="utf-8") as f:
        f.write(rc_text)
    utf8 = "/usr/share/doc/mhonarc/examples/utf-8.mrc"
    cmd = ["mhonarc", "-quiet", "-nolock", "-outdir", out, "-rcfile", utf8, "-rcfile", rc, src]
    r = subprocess.run(cmd, capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"mhonarc failed ({r.returncode}): {r.stderr[:500]!r}")
    pages = {}
    for name in sorted(os.listdir(out)):
        if name.endswith(".html"):
            with open(os.path.join(out, name), encoding="utf-8", errors="replace") as f:
                pages[name] = neutralize(f.read())
    return pages


LORE = "lore.test"
# public-inbox escapes a Message-ID in its URLs as an RFC 3986 path segment.
PI_SAFE = "-._~!$&'()*+,;=:@"
# public-inbox writes attributes unquoted where it can (href=raw).
PI_HREF = re.compile(r'(href|src)=("[^"]*"|[^\s>]+)', re.I)
PI_BODY = re.compile(r"<pre\s+id=b>(.*?)</pre>", re.S | re.I)


def pi_slug(mid, taken):
    """A file name for a Message-ID (the gate's server serves .html files)."""
    base = re.sub(r"[^A-Za-z0-9._@-]", "_", mid)[:80]
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    taken.add(slug)
    return slug


def render_public_inbox(archives, workdir, jobs):
    """public-inbox (the archiver behind lore.kernel.org), one inbox per
    list, served by its own PSGI application on loopback and fetched page
    by page: {path: (html, kind, message_id, body)}. Paths are
    LIST/index.html (the inbox's thread list) and LIST/SLUG.html (a
    message); links between fetched pages are rewritten to those paths,
    every other link to "#"."""
    from concurrent.futures import ThreadPoolExecutor

    cfg = os.path.join(workdir, "config")
    env = dict(os.environ, PI_CONFIG=cfg, HOME=workdir)
    addrs = {name: f"{name}@lists.test" for name in archives}
    for name in sorted(archives):
        subprocess.run(["public-inbox-init", "-V2", "-L", "basic", name, os.path.join(workdir, name),
                        f"http://{LORE}/{name}", addrs[name]], env=env, check=True, capture_output=True)
    subprocess.run(["git", "config", "-f", cfg, "publicinboxmda.spamcheck", "none"], env=env, check=True)

    def deliver(name):
        """The messages the inbox took: its default filter refuses HTML
        mail, as vger's lists do."""
        took = []
        for raw in archives[name]:
            r = subprocess.run(["public-inbox-mda", "--no-precheck"], input=raw, capture_output=True,
                               env=dict(env, ORIGINAL_RECIPIENT=addrs[name]), check=False)
            if r.returncode == 0:
                took.append(raw)
            elif b"plain-text" not in r.stderr:
                raise RuntimeError(f"public-inbox-mda into {name} failed: {r.stderr[:300]!r}")
        return name, took

    with ThreadPoolExecutor(max(1, jobs)) as ex:
        archives = dict(ex.map(deliver, sorted(archives)))
    app = os.path.join(workdir, "app.psgi")
    with open(app, "w", encoding="utf-8") as f:
        f.write("use PublicInbox::WWW; my $www = PublicInbox::WWW->new; sub { $www->call(@_) };\n")
    port = free_port()
    server = subprocess.Popen(["plackup", "-p", str(port), "-o", "127.0.0.1", app], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/{sorted(archives)[0]}/", timeout=5).read()
                break
            except OSError:
                time.sleep(0.2)
        fetched = {}  # server path -> (our path, html, kind, mid, body)
        for name in sorted(archives):
            taken = set()
            wanted = [(f"/{name}/", f"{name}/index.html", "index", None)]
            seen = set()
            for raw in archives[name]:
                msg = email.message_from_bytes(raw, policy=email.policy.compat32)
                mid = (msg.get("Message-ID") or "").strip().strip("<>")
                if not mid or mid in seen:
                    continue
                seen.add(mid)
                quoted = urllib.parse.quote(mid, safe=PI_SAFE)
                wanted.append((f"/{name}/{quoted}/", f"{name}/{pi_slug(mid, taken)}.html", "message", mid))
            for server_path, path, kind, mid in wanted:
                with urllib.request.urlopen(base + server_path, timeout=30) as r:
                    page = r.read().decode("utf-8", errors="replace")
                body = None
                if kind == "message":
                    m = PI_BODY.search(page)
                    # the message below its header lines
                    body = text_of_fragment(m.group(1).split("\n\n", 1)[-1]) if m else ""
                fetched[server_path] = (path, page, kind, mid, body)
    finally:
        server.terminate()
        server.wait()
    ours = {urllib.parse.unquote(sp): "/" + v[0] for sp, v in fetched.items()}
    pages = {}
    for server_path, (path, page, kind, mid, body) in fetched.items():
        def fix(m, server_path=server_path):
            url = h.unescape(m.group(2).strip('"'))
            if url.startswith("#"):
                return m.group(0)
            target = urllib.parse.urljoin(f"http://x{server_path}", url)
            parts = urllib.parse.urlsplit(target)
            # a thread's views (flat T/, nested t/) are not fetched: a
            # link to one leads to the message it is about
            path = re.sub(r"/[Tt]/$", "/", urllib.parse.unquote(parts.path))
            local = ours.get(path) if parts.netloc == "x" and not parts.query else None
            if local is None:
                return f'{m.group(1)}="#"'
            return f'{m.group(1)}="{local}"'
        pages[path] = (PI_HREF.sub(fix, page), kind, mid, body)
    return pages


def text_of_fragment(fragment):
    p = es.TextExtractor(es.TEMPLATES["none"])
    p.feed(fragment)
    p.close()
    return "\n".join(b for b, _ in p.blocks)[: es.MAX_CHARS]


MID_COMMENT = re.compile(r"<!--X-Message-Id: (.*?) -->")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--corpora", required=True, help="notmuch's test/corpora folder")
    ap.add_argument("--versions", default="{}")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    mail = read_corpus(args.corpora)
    known = {list_of_id(m.get("List-ID") or m.get("List-Id")) for _, _, _, m in mail} - {None}
    archives = {}
    for corpus, path, raw, msg in mail:
        for name in lists_of(msg, known, corpus):
            archives.setdefault(name, []).append(raw)
    plan = [(f"{name}.lists.test", f"mail-{name}", LIST_RC.format(idx=IDXSIZE, name=name), msgs)
            for name, msgs in sorted(archives.items())]
    plan.append(("mirror.test", "mail-mirror", MIRROR_RC.format(idx=IDXSIZE), [raw for _, _, raw, _ in mail]))

    pages, seeds = [], []
    for host, source, rc_text, msgs in plan:
        with tempfile.TemporaryDirectory() as tmp:
            rendered = render(msgs, rc_text, tmp)
        for name, page in rendered.items():
            body = BODY.search(page)
            mid = MID_COMMENT.search(page)
            kind = "message" if body else "index"
            pages.append({"host": host, "path": name, "source": source, "lang": "en", "html": page,
                          "kind": kind, "message_id": h.unescape(mid.group(1)) if mid else None,
                          "body": text_of_fragment(body.group(1)) if body else None})
        seeds += [f"http://{host}/maillist.html", f"http://{host}/threads.html"]
        print(f"{host}: {len(msgs)} messages, {len(rendered)} pages", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        lore = render_public_inbox(archives, tmp, args.jobs)
    for path, (page, kind, mid, body) in sorted(lore.items()):
        pages.append({"host": LORE, "path": path, "source": "mail-public-inbox", "lang": "en", "html": page,
                      "kind": kind, "message_id": mid, "body": body})
    seeds += [f"http://{LORE}/{name}/index.html" for name in sorted(archives)]
    print(f"{LORE}: {len(lore)} pages", file=sys.stderr)

    bodies = [p.pop("body") for p in pages]
    urls, extracted, _, _ = ar.write_set(args.out, pages, seeds, args.versions, 0, args.jobs)
    # the message as shown; an index page by its whole text
    texts = [b if b is not None else t for b, (_, t) in zip(bodies, extracted)]
    norm = es.Normalizer()
    inter, union, _, _, listed = es.all_resemblances([norm(t) for t in texts])
    kinds = {u: p["kind"] for u, p in zip(urls, pages)}
    with open(os.path.join(args.out, "message_pairs.jsonl"), "w", encoding="utf-8") as f:
        for i, j in listed:
            it, un = int(inter[i, j]), int(union[i, j])
            f.write(json.dumps({"a": urls[i], "b": urls[j], "jaccard": (it * 10**6 // un) / 10**6,
                                "label": es.label_of(it, un)}) + "\n")
    ns.write_combined(args.out, kinds, "message_pairs.jsonl", ("message",))
    # what the labels say about copies and replies
    n = len(pages)
    same = [(i, j) for i in range(n) for j in range(i + 1, n)
            if pages[i]["message_id"] and pages[i]["message_id"] == pages[j]["message_id"]]
    low = [(urls[i], urls[j]) for i, j in same if int(inter[i, j]) * 5 < 4 * int(union[i, j])]
    summary_path = os.path.join(args.out, "summary.json")
    with open(summary_path, encoding="utf-8") as f:
        summary = json.load(f)
    msg_labels = {"near": 0, "ambiguous": 0, "distinct": 0}
    for i, j in listed:
        if pages[i]["kind"] == pages[j]["kind"] == "message" and pages[i]["message_id"] != pages[j]["message_id"]:
            msg_labels[es.label_of(int(inter[i, j]), int(union[i, j]))] += 1
    archived = {host: len(m) for host, _, _, m in plan}
    archived[LORE] = sum(1 for p in pages if p["host"] == LORE and p["kind"] == "message")
    summary.update({"messages": len(mail), "archives": archived,
                    "copy_pairs": len(same), "copy_pairs_below_0_8": len(low),
                    "different_message_pairs_by_message_text": msg_labels})
    with open(summary_path, "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(json.dumps({k: summary[k] for k in ("messages", "archives", "copy_pairs", "copy_pairs_below_0_8",
                                               "different_message_pairs_by_message_text")}, indent=2))


if __name__ == "__main__":
    main()

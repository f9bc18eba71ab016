#!/usr/bin/env python3
"""Serve a folder of virtual hosts over loopback, as a static web server does.

    serve_site.py SITE_DIR PORT_FILE

SITE_DIR/HOST/PATH answers http://HOST:PORT/PATH (the Host header picks the
folder); only regular files are served (a folder is a 404, never a listing),
.html as `text/html` with no charset (as nginx sends it: the crawler detects
it), anything else 404. Binds 127.0.0.1 on a free port and writes the port
to PORT_FILE once it listens. Used by scripts/html-gate.sh.
"""

import http.server
import os
import socketserver
import sys
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."

    def do_GET(self):
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        full = os.path.realpath(os.path.join(self.root, host, path.lstrip("/")))
        inside = full.startswith(os.path.realpath(os.path.join(self.root, host)) + os.sep)
        if not (host and inside and full.endswith(".html") and os.path.isfile(full)):
            body = b"not found"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
        else:
            with open(full, "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    Handler.root = sys.argv[1]
    srv = Server(("127.0.0.1", 0), Handler)
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, sys.argv[2])
    srv.serve_forever()


if __name__ == "__main__":
    main()

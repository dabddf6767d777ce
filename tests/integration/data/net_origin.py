#!/usr/bin/env python3
"""The origin server of the network allow-list tests: plain HTTP on 127.0.0.1:PORT.

  /hello                         "hello from origin\\n"
  /big?mb=N                      N MiB of zeros (throughput figures)
  /simple/demo-pkg/              a PEP 503 index page for one wheel
  /packages/demo_pkg-1.0-...whl  that wheel, built in memory at start

Runs until killed. stdlib only.
"""
import http.server
import io
import socketserver
import sys
import urllib.parse
import zipfile

WHEEL_NAME = "demo_pkg-1.0-py3-none-any.whl"


def build_wheel():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("demo_pkg/__init__.py", "VALUE = 42\n")
        z.writestr("demo_pkg-1.0.dist-info/METADATA",
                   "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
        z.writestr("demo_pkg-1.0.dist-info/WHEEL",
                   "Wheel-Version: 1.0\nGenerator: corral-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("demo_pkg-1.0.dist-info/RECORD", "")
    return buf.getvalue()


WHEEL = build_wheel()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send_body(self, body, content_type="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/hello":
            return self.send_body(b"hello from origin\n")
        if url.path == "/big":
            mb = int(urllib.parse.parse_qs(url.query).get("mb", ["1"])[0])
            self.send_response(200)
            self.send_header("Content-Length", str(mb << 20))
            self.end_headers()
            chunk = b"\0" * (1 << 20)
            for _ in range(mb):
                self.wfile.write(chunk)
            return None
        if url.path.rstrip("/") == "/simple/demo-pkg":
            page = f'<html><body><a href="/packages/{WHEEL_NAME}">{WHEEL_NAME}</a></body></html>'
            return self.send_body(page.encode(), "text/html")
        if url.path == "/packages/" + WHEEL_NAME:
            return self.send_body(WHEEL, "application/octet-stream")
        self.send_error(404)
        return None

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()

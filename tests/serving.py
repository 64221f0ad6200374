"""The loopback server the serve tests start: a small site, the server in a thread, and requests
that send exactly the headers asked for (tests/apps/test_serve*.py)."""

from __future__ import annotations

import http.client
import threading

from classroom import serve

# Bigger than one socket buffer, so a reply cut short by a dropped connection shows as a short body.
BIG_ASSET = b"export const weights = [" + b"0x7f, " * 40_000 + b"];\n"
# A front-end chunk as marimo's build names it: its content hash is in its name.
HASHED_ASSET = "assets/chunk-Bx3_a9Qz.js"
# The room as the tests inject it: documentation addresses, only ever sent as Host header values.
ROOM_ADDRESSES = ["192.0.2.10", "2001:db8::10"]
ROOM_HOSTNAME = "workshop-laptop"


def make_site(folder):
    """A site with an index, a small and a big asset, a hashed chunk and a folder with its index."""
    (folder / "index.html").write_text("<h1>lab</h1>")
    (folder / "assets").mkdir()
    (folder / "assets" / "a.js").write_text("1")
    (folder / "assets" / "big.js").write_bytes(BIG_ASSET)
    (folder / HASHED_ASSET).write_bytes(BIG_ASSET)
    (folder / "explainers").mkdir()
    (folder / "explainers" / "index.html").write_text("explainers")
    return folder


def start_server(site, lan=False, **settings):
    if lan:
        settings = {"addresses": ROOM_ADDRESSES, "hostname": ROOM_HOSTNAME, **settings}
    server = serve.site_server(site, ("127.0.0.1", 0), lan=lan, **settings)
    # a short poll keeps shutdown, and so each test's teardown, quick
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


def stop_server(server, thread):
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def get_page(port, path, host=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def fetch(port, path, headers=(), method="GET", host=None, body=None):
    """(status, headers, body) of one request with exactly `headers` besides Host (and `body`, sent
    as it is, with no Content-Length of its own): http.client adds no Accept-Encoding of its own."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        for name, value in headers:
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()

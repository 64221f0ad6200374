"""Serve the built site: a quiet static server for loopback, and for a workshop room with --lan.

    python3 labctl.py serve          # site/ on 127.0.0.1 only
    python3 labctl.py serve --lan    # for a workshop: every interface, this machine's addresses only

`labctl.py serve` runs `python -m widgets.build.site serve`, which hands its words to main() here.
With --lan the server prints every address of this machine that another machine in the room could
use, read from the operating system (lan_addresses), a QR code for the first one, and answers
/room with a page that shows the same code and every address, for the projector. The Host header
must name one of those addresses, this machine's name or a loopback name, each with the served
port: anything else is refused, as on loopback, so a page on another name that resolves here (DNS
rebinding) cannot read the site as its own origin.

The addresses, the QR code and the /room page are widgets/build/room.py's.

Text assets go out gzip-compressed to a browser that accepts it, each file compressed once and kept
in memory under a byte cap. Files whose name carries a content hash (marimo's front-end in
/assets/) may be cached for a year; everything else is revalidated with a strong ETag. brotli is
not offered: the PyPI packages that encode it (Brotli, brotlicffi) are compiled extensions, not
pure Python, and every browser that accepts br accepts gzip.
"""

from __future__ import annotations

import errno
import functools
import gzip
import http.server
import io
import json
import os
import queue
import re
import selectors
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections import Counter, OrderedDict
from pathlib import Path

from widgets.build.classroom import MAX_BODY_BYTES, POST_PATHS, ClassError, Classroom
from widgets.build.room import ROOM_PATH, lan_addresses, lan_banner, room_page, terminal_has_colour, url_host

ROOT = Path(__file__).resolve().parents[2]  # the repository: widgets/build/serve.py
DEFAULT_PORT = 8765
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# A reply's writes each have this long to reach the client; a browser needs milliseconds.
REQUEST_TIMEOUT_S = 15
# A connection has this long from its accept to send its whole request head (and a post's body),
# one deadline however its bytes trickle in; a browser sends them with the connection.
HEAD_DEADLINE_S = 5
# The longest request head read; a browser's is a few KB, cookies included.
MAX_HEAD_BYTES = 64 * 1024
# Connections the kernel queues until the serving loop accepts them.
REQUEST_QUEUE_SIZE = 256
# Requests handled at once, one thread each, and at most MAX_HANDLERS_PER_CLIENT of them for one
# address, so a client that asks for files and never reads them holds half the threads at most.
MAX_HANDLERS = 128
MAX_HANDLERS_PER_CLIENT = 64
# Connections the serving loop holds before their request is handed to a thread: still arriving, or
# whole and waiting for a free handler. A classroom's burst from one address (a NAT, a browser's
# test on loopback) is 200; an address over its bound loses its oldest connection whose request
# has not arrived, and so does the loop over its total. 500 also fits select()'s 512 on Windows.
MAX_WAITING = 500
MAX_WAITING_PER_CLIENT = 256
# A Host header as browsers send it: a DNS name or IPv4 address, or an IPv6 address in brackets,
# then an optional port. Anything else (a list, spaces, a path, user@) is malformed.
HOST_HEADER = re.compile(
    r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]+))?"
)
# A 253-character name, its trailing dot, a colon and five digits; longer is not a host.
MAX_HOST_LENGTH = 260
# Files sent gzip-compressed to a browser that accepts it; images and fonts are compressed already.
COMPRESSIBLE_SUFFIXES = frozenset({".html", ".js", ".mjs", ".css", ".json", ".svg", ".wasm", ".map", ".txt"})
# Below this a file fits in one packet either way, and gzip's 20-byte frame can make it bigger.
GZIP_MIN_BYTES = 1024
# The gzip copies kept in memory, in bytes. marimo's part of the site is about 10 MB of text, about
# 3 MB compressed, so the whole site stays cached; a folder of larger files drops the least recently
# used instead of growing.
GZIP_CACHE_BYTES = 256 * 1024 * 1024
# zlib's default: level 9 made marimo's largest bundles under 1% smaller and took twice as long.
GZIP_LEVEL = 6
# The name of a file the front-end's build gave a content hash ("index-Bx3_a9Qz.js"; the site's build
# reads the same names with it): a new content is a new name, so the old one never changes.
HASHED_NAME = re.compile(r"-[\w-]{8}\.[a-z0-9]+$")
# Where the site's build writes files named by their content: marimo's front-end and its bundles,
# and the lab's widget modules (site.WIDGET_DIR).
HASHED_FOLDERS = ("/assets/", "/@file/")
IMMUTABLE = "public, max-age=31536000, immutable"


class ServeError(RuntimeError):
    """The site could not be served; the message is one line that says why and what to do."""


# Compressed copies and cache headers.


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding value allows gzip: named with a quality above 0, or allowed by
    "*" without being named (RFC 9110, 12.5.3)."""
    qualities: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *parameters = item.split(";")
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0  # a quality that does not parse allows nothing
        qualities[coding.strip().lower()] = quality
    chosen = qualities.get("gzip", qualities.get("*", 0.0))
    return chosen > 0  # false for nan too


class GzipCache:
    """gzip copies of files, each made once for one version of the file (its modification time and
    size) and kept while their total stays under `cap_bytes`, the least recently used dropped first.
    One file is compressed at a time, so a classroom's burst of first requests for one file
    compresses it once, and the memory in flight is one file's."""

    def __init__(self, cap_bytes: int = GZIP_CACHE_BYTES):
        self.cap_bytes = cap_bytes
        self.total_bytes = 0
        # path -> (modification time in ns, size, gzip body), least recently used first
        self.entries: OrderedDict[str, tuple[int, int, bytes]] = OrderedDict()
        self.lock = threading.Lock()
        self.compressing = threading.Lock()

    def cached(self, path: str, version: tuple[int, int]) -> bytes | None:
        with self.lock:
            entry = self.entries.get(path)
            if entry is None or entry[:2] != version:
                return None
            self.entries.move_to_end(path)
            return entry[2]

    def compressed(self, path: str, version: tuple[int, int], file) -> bytes | None:
        """The gzip body of `file` (open at its start) at `version`, or None when the file changed
        while it was read."""
        if (body := self.cached(path, version)) is not None:
            return body
        with self.compressing:
            if (body := self.cached(path, version)) is not None:
                return body
            data = file.read(version[1] + 1)
            if len(data) != version[1]:
                return None
            body = gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)
            self.store(path, version, body)
            return body

    def store(self, path: str, version: tuple[int, int], body: bytes) -> None:
        with self.lock:
            if (previous := self.entries.pop(path, None)) is not None:
                self.total_bytes -= len(previous[2])
            if len(body) > self.cap_bytes:
                return  # sent this once, never kept
            self.entries[path] = (*version, body)
            self.total_bytes += len(body)
            while self.total_bytes > self.cap_bytes:
                _, (_, _, dropped) = self.entries.popitem(last=False)
                self.total_bytes -= len(dropped)


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match value names `etag`, compared weakly as RFC 9110 13.1.2 asks."""
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


def site_handler(
    site: Path,
    *,
    lan: bool = False,
    addresses: tuple[str, ...] = (),
    hostname: str = "",
    gzip_cache: GzipCache | None = None,
    timeout_s: float = REQUEST_TIMEOUT_S,
    classroom: Classroom | None = None,
) -> type:
    """A quiet static-file handler for `site`: no folder listings, one well-formed Host header that
    is a loopback name (with `lan` also one of `addresses` or `hostname`) with the served port,
    nothing through a link that leaves `site`, 400 for a path that does not decode, text files
    gzipped from `gzip_cache` when the browser accepts it, cache headers and ETags, the room page
    at /room with `lan`, each write of a reply within `timeout_s` seconds, requests that say their
    length twice or send a Transfer-Encoding refused, and one log line per error,
    none per hit. With a `classroom` (serve --class) every reply sets its cookie, POST /class/answers
    takes a student's answer, and /class and /class/notes are the teacher's pages, whose data
    needs the teacher's token (widgets/build/classroom.py). Any other method gets a 405."""
    real_site = Path(os.path.realpath(site))
    gzip_cache = gzip_cache if gzip_cache is not None else GzipCache()
    lan_names = (*map(url_host, addresses), url_host(hostname)) if lan else ()
    allowed_names = tuple(name.lower() for name in (*LOOPBACK_HOSTS, *lan_names))
    # made on its first request, when the served port is known
    room = functools.lru_cache(maxsize=1)(lambda port: room_page(list(addresses), hostname, port))

    class Handler(http.server.SimpleHTTPRequestHandler):
        timeout = timeout_s  # on each write of the reply
        # source maps are JSON; mimetypes knows no type for them
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".map": "application/json"}

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def setup(self):
            # SiteServer's loop read the whole request before handing it over (a Waiting)
            self.connection = self.request.connection
            self.connection.settimeout(self.timeout)
            self.rfile = io.BytesIO(self.request.data)
            self.wfile = ReplyWriter(self.connection)

        def handle_one_request(self):
            self.allowed = None  # the methods a 405 names
            if self.request.too_long:
                self.requestline, self.request_version, self.command = "", "", ""
                self.send_error(431, "Request head too large")
                return
            super().handle_one_request()

        def parse_request(self):
            if not super().parse_request():
                return False
            if (refusal := self.framing_refusal()) is None:
                return True
            if classroom is not None and self.command == "POST" and self.url_path() in POST_PATHS:
                with self.send_refusal(ClassError(*refusal), close=True) as reply:
                    self.copyfile(reply, self.wfile)
            else:
                self.send_error(*refusal)
            return False

        def framing_refusal(self) -> tuple[int, str] | None:
            """The error that refuses how this request says where its body ends, or None. Two
            Content-Length headers, or a Transfer-Encoding beside one, may be read differently by
            this server and by whatever sits in front of it (request smuggling, RFC 9112 6.3); this
            server never takes a chunked body, so any Transfer-Encoding, even an empty one, is refused."""
            if len(self.headers.get_all("Content-Length") or []) > 1:
                return 400, "a request says its length once: this one has more than one Content-Length"
            if "Transfer-Encoding" in self.headers:
                return 411, "this server takes no Transfer-Encoding: a request says its length in one Content-Length"
            return None

        def url_path(self) -> str:
            return urllib.parse.urlsplit(self.path).path

        def host_refusal(self) -> tuple[int, str] | None:
            """The error that refuses this request's Host header, or None to accept it."""
            hosts = self.headers.get_all("Host") or []
            # Two Host headers may be read differently by this server and by whatever sits in
            # front of it, so which name the browser used is unknown (RFC 9112 asks for a 400).
            if len(hosts) > 1:
                return 400, "More than one Host header"
            host = hosts[0].strip(" \t") if hosts else ""
            # An empty or missing Host names nothing that could be allowed, as before.
            if not host:
                return 403, "Host not allowed"
            shape = HOST_HEADER.fullmatch(host) if len(host) <= MAX_HOST_LENGTH else None
            if shape is None or (shape["port"] is not None and not 0 < int(shape["port"]) < 65536):
                return 400, "Malformed Host header"
            # A page on another name that resolves to this machine (DNS rebinding) would read the
            # site as its own origin; the Host must be a name this server printed, with its port.
            port = self.server.server_address[1]
            if host.lower() not in {f"{name}:{port}" for name in allowed_names}:
                return 403, "Host not allowed"
            return None

        def leaves_site(self, path: str) -> bool:
            """Whether `path`, or the index page a folder is answered with, resolves through a link
            to somewhere outside the site. Links that stay inside it are followed."""
            candidates = [path, os.path.join(path, "index.html")] if os.path.isdir(path) else [path]
            return not all(Path(os.path.realpath(candidate)).is_relative_to(real_site) for candidate in candidates)

        def send_head(self):
            if refusal := self.host_refusal():
                self.send_error(*refusal)
                return None
            # A NUL byte would end in open()'s ValueError and a traceback; ".." and backslashes
            # would be silently dropped or reinterpreted. All are refused as malformed.
            try:
                decoded = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path, errors="strict")
            except UnicodeDecodeError:
                decoded = "\0"
            if "\0" in decoded or "\\" in decoded or ".." in decoded.split("/"):
                self.send_error(400, "Bad path")
                return None
            if lan and decoded == ROOM_PATH:
                return self.send_room(room(self.server.server_address[1]))
            if classroom is not None and (teachers := classroom.page_at(decoded)) is not None:
                return self.send_room(*teachers)
            if classroom is not None:
                try:
                    data = classroom.data_at(decoded, self.headers.get("Authorization"))
                except ClassError as refusal:
                    return self.send_refusal(refusal)
                if data is not None:
                    return self.send_json(200, data)
            path = self.translate_path(self.path)
            # The reply a missing file gets, so it does not tell whether the link's target exists.
            # Who can write into site/ can also swap a link between this check and the open.
            if self.leaves_site(path):
                self.send_error(404, "File not found")
                return None
            if os.path.isdir(path):
                if not decoded.endswith("/"):
                    return super().send_head()  # its redirect to the folder's address with a slash
                # a folder is its index page; a folder without one is not listed, but a 404
                path = os.path.join(path, "index.html")
            # a file asked for as a folder (Python's issue 17324)
            if path.endswith("/"):
                self.send_error(404, "File not found")
                return None
            try:
                file = open(path, "rb")  # closed by the caller once sent
            except OSError:
                self.send_error(404, "File not found")
                return None
            try:
                return self.send_file(file, path, decoded)
            except BaseException:
                file.close()
                raise

        # the room page holds its own style and inline SVG, and loads nothing
        def send_room(self, page: bytes, policy: str = "default-src 'none'; style-src 'unsafe-inline'"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Content-Security-Policy", policy)
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            return io.BytesIO(page)

        def send_file(self, file, path: str, url_path: str):
            status = os.fstat(file.fileno())
            version = (status.st_mtime_ns, status.st_size)
            compressible = Path(path).suffix.lower() in COMPRESSIBLE_SUFFIXES
            body = None
            if (
                compressible
                and GZIP_MIN_BYTES <= status.st_size <= gzip_cache.cap_bytes
                and accepts_gzip(", ".join(self.headers.get_all("Accept-Encoding") or []))
            ):
                body = gzip_cache.compressed(path, version, file)
                file.seek(0)
            # strong: one tag per version of the file and per encoding of its bytes
            etag = f'"{status.st_mtime_ns:x}-{status.st_size:x}{"-gzip" if body is not None else ""}"'
            hashed = url_path.startswith(HASHED_FOLDERS) and HASHED_NAME.search(url_path) is not None
            cache_headers = [("Cache-Control", IMMUTABLE if hashed else "no-cache"), ("ETag", etag)]
            if compressible:
                cache_headers.append(("Vary", "Accept-Encoding"))
            if etag_matches(", ".join(self.headers.get_all("If-None-Match") or []), etag):
                self.send_response(304)
                for header in cache_headers:
                    self.send_header(*header)
                self.end_headers()
                file.close()
                return None
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Length", str(len(body) if body is not None else status.st_size))
            self.send_header("Last-Modified", self.date_time_string(status.st_mtime))
            if body is not None:
                self.send_header("Content-Encoding", "gzip")
            for header in cache_headers:
                self.send_header(*header)
            self.end_headers()
            if body is None:
                return file
            file.close()
            return io.BytesIO(body)

        def send_json(self, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()):
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for header in headers:
                self.send_header(*header)
            self.end_headers()
            return io.BytesIO(body)

        def send_refusal(self, refusal: ClassError, close: bool = False):
            """The teacher's view's refusal as JSON, {"error": reason}, which its pages show."""
            headers = [] if refusal.retry_after_s is None else [("Retry-After", str(refusal.retry_after_s))]
            if close:  # the body was not read: the connection ends with this reply
                headers.append(("Connection", "close"))
            return self.send_json(refusal.status, json.dumps({"error": str(refusal)}).encode("utf-8"), tuple(headers))

        def end_headers(self):
            if classroom is not None:
                self.send_header("Set-Cookie", classroom.cookie(self.server.server_address[1]))
            if self.command not in ("GET", "HEAD"):
                # a body this server did not read must not be taken for the next request
                self.close_connection = True
            if self.allowed:
                self.send_header("Allow", self.allowed)
            super().end_headers()

        def do_POST(self):
            if refusal := self.host_refusal():
                self.send_error(*refusal)
                return
            if classroom is None or self.url_path() not in POST_PATHS:
                self.refuse_method()
                return
            reply = self.take_post()
            if reply is not None:
                with reply:
                    self.copyfile(reply, self.wfile)

        def take_post(self):
            """A post to the class (a student's answer, a teacher's change): its length checked,
            from a page of this site (Origin), then classroom.post."""
            length = self.headers.get("Content-Length", "")
            if not (length.isascii() and length.isdigit()):
                return self.send_refusal(ClassError(411, "an answer's post must say its length"), close=True)
            if int(length) > MAX_BODY_BYTES:
                return self.send_refusal(
                    ClassError(413, f"an answer's post is at most {MAX_BODY_BYTES} bytes"), close=True
                )
            # the Host was checked: a page of this site sends its own origin with every post
            if (self.headers.get("Origin") or "").lower() != f"http://{self.headers['Host'].strip().lower()}":
                return self.send_refusal(ClassError(403, "answers come from the lab's own pages"), close=True)
            if self.headers.get_content_type() != "application/json":
                return self.send_refusal(ClassError(415, "an answer is posted as application/json"), close=True)
            # the serving loop waited for the body that this same length announced
            body = self.rfile.read(int(length))
            try:
                reply = classroom.post(self.url_path(), self.client_address[0], self.headers.get("Authorization"), body)
            except ClassError as refusal:
                return self.send_refusal(refusal)
            if reply is not None:
                return self.send_json(200, reply)
            self.send_response(204)
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            return None

        def refuse_method(self):
            self.allowed = "GET, HEAD, POST" if classroom is not None else "GET, HEAD"
            self.send_error(405, "Method not allowed")

        # http.server answers a method it has no do_ for with a 501; this site only reads (and,
        # in a class, takes answers), so every other method is the client's error
        do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_CONNECT = do_TRACE = refuse_method

        def log_request(self, code="-", size="-"):
            # one line per error, nothing per successful request
            if isinstance(code, int) and code >= 400:
                super().log_request(code, size)

        def log_error(self, format, *args):
            # send_error logs through log_request already; this would be a second line
            return None

    return Handler


class ReplyWriter(io.BufferedIOBase):
    """A reply's bytes written whole to the client, each write within the connection's timeout."""

    def __init__(self, connection: socket.socket):
        self.connection = connection

    def writable(self):
        return True

    def write(self, data):
        self.connection.sendall(data)
        return memoryview(data).nbytes


# The blank line that ends a request head, as http.server reads lines (with or without \r).
HEAD_END = re.compile(rb"\r?\n\r?\n")
# A body's length as the handler reads it; anything else (two, or beside a Transfer-Encoding) is
# handed over at the end of the head, for the handler to refuse.
CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*([0-9]{1,10})\r?$", re.IGNORECASE | re.MULTILINE)
TRANSFER_ENCODING = re.compile(rb"^transfer-encoding:", re.IGNORECASE | re.MULTILINE)
# A read of a connection's waiting bytes; a browser's request head is one or two.
READ_BYTES = 16 * 1024


class Waiting:
    """A connection SiteServer's loop holds until its request has arrived whole: its bytes so far,
    and the deadline (HEAD_DEADLINE_S from its accept) by which they must be complete."""

    def __init__(self, connection: socket.socket, address: tuple, deadline: float):
        self.connection, self.address, self.deadline = connection, address, deadline
        self.client = address[0]
        self.data = bytearray()
        self.expected: int | None = None  # the request's length once its head is in: head and body
        self.too_long = False

    @property
    def ready(self) -> bool:
        return self.expected is not None and len(self.data) >= self.expected

    def take(self, chunk: bytes) -> None:
        scanned = max(0, len(self.data) - 3)  # a blank line may straddle two reads
        self.data += chunk
        if self.expected is not None:
            return
        if (end := HEAD_END.search(self.data, scanned)) is None:
            if len(self.data) > MAX_HEAD_BYTES:
                self.too_long, self.expected = True, 0
            return
        head = bytes(self.data[: end.end()])
        lengths = CONTENT_LENGTH.findall(head)
        waits_for_body = len(lengths) == 1 and not TRANSFER_ENCODING.search(head)
        body_bytes = int(lengths[0]) if waits_for_body and int(lengths[0]) <= MAX_BODY_BYTES else 0
        self.expected = end.end() + body_bytes


class SiteServer(http.server.HTTPServer):
    """The built site on `address`, with site_handler's rules. One loop (serve_forever) accepts
    every connection and reads its request without blocking; only a request that has arrived whole
    is handed to a handler thread, so idle and trickling connections cost a socket and a buffer,
    never a thread. See site_server for the settings."""

    request_queue_size = REQUEST_QUEUE_SIZE
    # On Windows SO_REUSEADDR lets a second server bind a port that is in use, which would
    # hide the port-in-use message; elsewhere it only allows a restart during TIME_WAIT.
    allow_reuse_address = os.name != "nt"

    def __init__(self, site: Path, address: tuple[str, int], *, lan, addresses, hostname, classroom, limits):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.lan_addresses = (lan_addresses() if addresses is None else list(addresses)) if lan else []
        self.hostname = (socket.gethostname() if hostname is None else hostname) if lan else ""
        self.gzip_cache = GzipCache(limits["gzip_cache_bytes"])
        self.head_deadline_s = limits["head_deadline_s"]
        self.max_handlers, self.max_handlers_per_client = limits["max_handlers"], limits["max_handlers_per_client"]
        self.max_waiting, self.max_waiting_per_client = limits["max_waiting"], limits["max_waiting_per_client"]
        names = {"addresses": tuple(self.lan_addresses), "hostname": self.hostname}
        handler = site_handler(
            site, lan=lan, **names, gzip_cache=self.gzip_cache, timeout_s=limits["timeout_s"], classroom=classroom
        )
        # accept order, which is deadline order; and the same connections by client address
        self.waiting: OrderedDict[socket.socket, Waiting] = OrderedDict()
        self.waiting_by_client: dict[str, OrderedDict[socket.socket, Waiting]] = {}
        self.handling: Counter[str] = Counter()
        # handler threads say here which client's request they finished, and wake the loop
        self.finished: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.wake_reader, self.wake_writer = socket.socketpair()
        self.wake_writer.setblocking(False)
        self.stop_requested, self.stopped = threading.Event(), threading.Event()
        # binds, and closes what it made when it cannot (server_close)
        super().__init__(address, handler)

    def server_bind(self):
        if self.address_family == socket.AF_INET6:
            # one socket for both families, as http.server's own DualStackServer does
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    def serve_forever(self, poll_interval: float = 0.5):
        selector = selectors.DefaultSelector()
        self.socket.setblocking(False)
        selector.register(self.socket, selectors.EVENT_READ)
        selector.register(self.wake_reader, selectors.EVENT_READ)
        try:
            while not self.stop_requested.is_set():
                for key, _ in selector.select(self.select_timeout(poll_interval)):
                    if key.fileobj is self.socket:
                        self.accept_waiting(selector)
                    elif key.fileobj is self.wake_reader:
                        self.take_finished()
                    else:
                        self.read_waiting(key.data, selector)
                self.close_expired(selector)
                self.dispatch()
        finally:
            for waiting in list(self.waiting.values()):
                self.drop(waiting, selector)
            selector.close()
            self.stop_requested.clear()
            self.stopped.set()

    def shutdown(self):
        """Stops serve_forever and waits until it has returned, as socketserver's does."""
        self.stop_requested.set()
        self.wake()
        self.stopped.wait()
        self.stopped.clear()

    def server_close(self):
        super().server_close()
        self.wake_reader.close()
        self.wake_writer.close()

    def wake(self) -> None:
        try:
            self.wake_writer.send(b"\0")
        except OSError:  # full (the loop wakes anyway) or closed (the server has stopped)
            pass

    def select_timeout(self, poll_interval: float) -> float:
        incomplete = next((waiting for waiting in self.waiting.values() if not waiting.ready), None)
        if incomplete is None:
            return poll_interval
        return max(0.0, min(poll_interval, incomplete.deadline - time.monotonic()))

    def accept_waiting(self, selector) -> None:
        # a burst is taken in turns, so reading the connections already accepted is not held up
        for _ in range(64):
            try:
                connection, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as error:
                # out of file descriptors: the oldest unfinished connection makes room, or the
                # kernel keeps the new one queued a moment
                if error.errno in (errno.EMFILE, errno.ENFILE):
                    if self.waiting:
                        self.drop(self.oldest(self.waiting.values()), selector)
                    else:
                        time.sleep(0.05)
                return
            connection.setblocking(False)
            waiting = Waiting(connection, address, time.monotonic() + self.head_deadline_s)
            self.waiting[connection] = waiting
            self.waiting_by_client.setdefault(waiting.client, OrderedDict())[connection] = waiting
            selector.register(connection, selectors.EVENT_READ, waiting)
            mine = self.waiting_by_client[waiting.client]
            if len(mine) > self.max_waiting_per_client:
                self.drop(self.oldest(mine.values()), selector)
            if len(self.waiting) > self.max_waiting:
                self.drop(self.oldest(self.waiting.values()), selector)

    @staticmethod
    def oldest(waitings) -> Waiting:
        """The connection to close for room: the oldest whose request has not arrived whole (an
        idle or trickling one, far older than a browser's), else the oldest."""
        waitings = list(waitings)
        return next((waiting for waiting in waitings if not waiting.ready), waitings[0])

    def read_waiting(self, waiting: Waiting, selector) -> None:
        if self.waiting.get(waiting.connection) is not waiting:
            return  # closed for room earlier in the same turn
        try:
            chunk = waiting.connection.recv(READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # closed or reset before its request was whole
            self.drop(waiting, selector)
            return
        waiting.take(chunk)
        if waiting.ready:
            selector.unregister(waiting.connection)

    def close_expired(self, selector) -> None:
        now = time.monotonic()
        for waiting in list(self.waiting.values()):
            if waiting.deadline > now:
                break
            if not waiting.ready:
                self.drop(waiting, selector)

    def dispatch(self) -> None:
        """Hands each whole request, oldest first, to a handler thread while one is free and its
        client is under its share."""
        for waiting in list(self.waiting.values()):
            if self.handling.total() >= self.max_handlers:
                return
            if waiting.ready and self.handling[waiting.client] < self.max_handlers_per_client:
                self.forget(waiting)
                self.handling[waiting.client] += 1
                threading.Thread(target=self.handle_waiting, args=(waiting,), daemon=True).start()

    def take_finished(self) -> None:
        self.wake_reader.recv(4096)  # what is left wakes the loop again
        while True:
            try:
                client = self.finished.get_nowait()
            except queue.Empty:
                return
            self.handling[client] -= 1
            if self.handling[client] <= 0:
                del self.handling[client]

    def forget(self, waiting: Waiting) -> None:
        del self.waiting[waiting.connection]
        mine = self.waiting_by_client[waiting.client]
        del mine[waiting.connection]
        if not mine:
            del self.waiting_by_client[waiting.client]

    def drop(self, waiting: Waiting, selector) -> None:
        self.forget(waiting)
        if not waiting.ready:
            selector.unregister(waiting.connection)
        waiting.connection.close()

    def handle_waiting(self, waiting: Waiting) -> None:
        try:
            waiting.connection.setblocking(True)
            self.finish_request(waiting, waiting.address)
        except Exception:
            self.handle_error(waiting.connection, waiting.address)
        finally:
            self.shutdown_request(waiting.connection)
            self.finished.put(waiting.client)
            self.wake()

    def handle_error(self, request, client_address):
        # A browser that drops its connection while a file is on its way (a student leaving a
        # page before it has loaded), or stops reading it, is no fault of the server's.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def site_server(
    site: Path,
    address: tuple[str, int],
    *,
    lan: bool = False,
    addresses: list[str] | None = None,
    hostname: str | None = None,
    timeout_s: float = REQUEST_TIMEOUT_S,
    head_deadline_s: float | None = None,
    max_handlers: int = MAX_HANDLERS,
    max_handlers_per_client: int = MAX_HANDLERS_PER_CLIENT,
    max_waiting: int = MAX_WAITING,
    max_waiting_per_client: int = MAX_WAITING_PER_CLIENT,
    gzip_cache_bytes: int = GZIP_CACHE_BYTES,
    classroom: Classroom | None = None,
) -> SiteServer:
    """A server for `site` listening on `address` (serve_forever runs it; an IPv6 address such as
    "::" also takes IPv4 where the system allows), with site_handler's rules. A connection has
    `head_deadline_s` (HEAD_DEADLINE_S, or `timeout_s` if shorter) from its accept to send its
    request whole; at most `max_waiting` connections
    (`max_waiting_per_client` from one address) wait for that or for a handler; at most
    `max_handlers` requests (`max_handlers_per_client` from one address) are handled at once, each
    write of a reply within `timeout_s`. With `lan` the Host header may also name each of
    `addresses` (lan_addresses() when None) or `hostname` (this machine's when None), and /room
    shows them. With a `classroom` it is the teacher's view too (site_handler).
    Raises OSError when the address cannot be bound."""
    limits = {
        "timeout_s": timeout_s,
        "head_deadline_s": min(HEAD_DEADLINE_S, timeout_s) if head_deadline_s is None else head_deadline_s,
        "max_handlers": max_handlers,
        "max_handlers_per_client": max_handlers_per_client,
        "max_waiting": max_waiting,
        "max_waiting_per_client": max_waiting_per_client,
        "gzip_cache_bytes": gzip_cache_bytes,
    }
    return SiteServer(
        site, address, lan=lan, addresses=addresses, hostname=hostname, classroom=classroom, limits=limits
    )


def allow_open_files() -> None:
    """Raises this process's limit on open files to what the server's bounds can hold at once
    (macOS starts a terminal at 256), where the system allows; accept_waiting copes without."""
    try:
        import resource
    except ImportError:  # Windows, whose select() bound MAX_WAITING already fits
        return
    wanted = MAX_WAITING + 2 * MAX_HANDLERS + 64  # a socket each, a file per handler, and the rest
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    try:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard)
        )
    except (ValueError, OSError):
        pass


def stop_on_signal(signum, frame):
    # SIGTERM and SIGHUP (a closed terminal) stop serve as Ctrl+C does
    raise KeyboardInterrupt


def serve(
    site: Path = ROOT / "site",
    port: int = DEFAULT_PORT,
    *,
    lan: bool = False,
    addresses: list[str] | None = None,
    hostname: str | None = None,
    classroom: Classroom | None = None,
) -> None:
    """Serve the built site on 127.0.0.1 only, or on every interface with `lan` (for workshops),
    printing `addresses` (lan_addresses() when None) and `hostname` (this machine's when None);
    with a `classroom` also the teacher's view, whose link is printed once, here.
    Raises ServeError when there is no built site or the port cannot be used."""
    if not (site / "index.html").exists():
        raise ServeError(f"{site} has no index.html; build the site first (python3 labctl.py site)")
    command = "python3 labctl.py serve" + (" --lan" if lan else "") + (" --class" if classroom else "")
    bind = where = "127.0.0.1"
    if lan:
        # an IPv6 address is printed only where the server listens on IPv6 as well as IPv4
        dual_stack = socket.has_dualstack_ipv6()
        bind, where = ("::" if dual_stack else "0.0.0.0"), "every interface"
        addresses = [
            name for name in (lan_addresses() if addresses is None else addresses) if dual_stack or ":" not in name
        ]
    stop_signals = [signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
    # only the main thread may set signal handlers; serve run from another thread keeps Python's
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {number: signal.getsignal(number) for number in stop_signals} if in_main_thread else {}
    server = None
    try:
        for number in previous:
            signal.signal(number, stop_on_signal)
        allow_open_files()
        server = site_server(site, (bind, port), lan=lan, addresses=addresses, hostname=hostname, classroom=classroom)
        port = server.server_address[1]  # the one the system chose when asked for port 0
        if lan:
            print(lan_banner(server.lan_addresses, server.hostname, port, colour=terminal_has_colour()))
        if classroom is not None:
            print(class_banner(classroom, port))
        print(f"serving {site} at http://127.0.0.1:{port}/ (Ctrl+C to stop)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        # a second signal while the server closes would end in a traceback; it is stopping anyway
        for number in previous:
            signal.signal(number, signal.SIG_IGN)
        print("stopped", flush=True)
    except OSError as error:
        if server is not None:
            raise
        if error.errno == errno.EADDRINUSE:
            other = port + 1 if port < 65535 else DEFAULT_PORT
            raise ServeError(f"port {port} is in use on {where}; pick another with: {command} --port {other}") from None
        raise ServeError(
            f"cannot serve on {where} port {port} ({error.strerror}); try another with: {command} --port N"
        ) from None
    finally:
        if server is not None:
            server.server_close()
        for number, handler in previous.items():
            signal.signal(number, handler)


def class_banner(classroom: Classroom, port: int) -> str:
    """What serve --class prints: the teacher's link, once, and what the students' pages send."""
    return "\n".join(
        [
            "the teacher's view of the room's answers (keep this link to yourself: it carries the token):",
            f"  {classroom.teacher_link(port)}",
            "each student's exercises send every answer they check, under the name they type, to this "
            "server; it keeps them in memory only, and they are gone when it stops",
            "from that page: each notebook as slides, and their speaker notes on this screen",
        ]
    )


def requested_port(words: list[str]) -> int | None:
    """The port `serve PORT` or `serve --port PORT` asks for, DEFAULT_PORT when none is given, or
    None when the words are neither."""
    if not words:
        return DEFAULT_PORT
    spelled = words[1:] if words[0] == "--port" else words
    if len(spelled) == 1 and spelled[0].isascii() and spelled[0].isdigit() and 0 < int(spelled[0]) < 65536:
        return int(spelled[0])
    return None


def main(argv: list[str], site: Path | None = None) -> int:
    """`serve`'s words after the command itself ([PORT | --port PORT] [--lan] [--class]); serves
    `site` (the repository's site/ when None)."""
    lan, in_class = "--lan" in argv, "--class" in argv
    port = requested_port([arg for arg in argv if arg not in ("--lan", "--class")])
    if port is None:
        print(
            f"serve takes a port from 1 to 65535 (PORT or --port PORT), --lan and --class, got {' '.join(argv)!r}",
            file=sys.stderr,
        )
        return 2
    try:
        serve(site if site is not None else ROOT / "site", port, lan=lan, classroom=Classroom() if in_class else None)
    except ServeError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

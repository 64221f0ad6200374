"""What one request to the served site gets: SiteHandler answers a request that SiteServer's loop
(classroom/serve.py) has read whole, with the rules of that server's settings.

Text assets go out gzip-compressed to a browser that accepts it, each file compressed once and kept
in memory under a byte cap (GzipCache). Files whose name carries a content hash (marimo's front-end
in /assets/) may be cached for a year; everything else is revalidated with a strong ETag. brotli is
not offered: the PyPI packages that encode it (Brotli, brotlicffi) are compiled extensions, not
pure Python, and every browser that accepts br accepts gzip.
"""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import re
import socket
import threading
import urllib.parse
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from classroom.room import ROOM_PATH
from classroom.teacher_view import MAX_BODY_BYTES, POST_PATHS, ClassError

if TYPE_CHECKING:
    from classroom.serve import SiteServer

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# A reply's writes each have this long to reach the client; a browser needs milliseconds.
REQUEST_TIMEOUT_S = 15
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


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """A quiet static-file handler for the server's site: no folder listings, one well-formed Host
    header that is a loopback name (with --lan also one of the server's addresses or its hostname)
    with the served port, nothing through a link that leaves the site, 400 for a path that does not
    decode, text files gzipped from the server's gzip cache when the browser accepts it, cache
    headers and ETags, the room page at /room with --lan, each write of a reply within the server's
    reply timeout, requests that say their length twice or send a Transfer-Encoding refused, and one
    log line per error, none per hit. With a classroom (serve --class) every reply sets its cookie,
    POST /class/answers takes a student's answer, and /class and /class/notes are the teacher's
    pages, whose data needs the teacher's token (classroom/teacher_view.py). Any other method gets
    a 405.

    Its settings are the server's (SiteServer): `site`, `real_site`, `allowed_names`, `lan`,
    `room_html`, `gzip_cache`, `reply_timeout_s` and `classroom`."""

    server: SiteServer
    timeout = REQUEST_TIMEOUT_S  # on each write of the reply; setup takes the server's
    # source maps are JSON; mimetypes knows no type for them
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".map": "application/json"}

    def __init__(self, request, client_address, server: SiteServer):
        super().__init__(request, client_address, server, directory=str(server.site))

    # Reading the request.

    def setup(self):
        # SiteServer's loop read the whole request before handing it over (a Waiting)
        self.timeout = self.server.reply_timeout_s
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
        if self.takes_posts() and self.command == "POST" and self.url_path() in POST_PATHS:
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

    def takes_posts(self) -> bool:
        """Whether this server is the teacher's view (serve --class), the only one that takes posts."""
        return self.server.classroom is not None

    def url_path(self) -> str:
        return urllib.parse.urlsplit(self.path).path

    def header_list(self, name: str) -> str:
        """Every `name` header of the request, joined as one comma-separated value."""
        return ", ".join(self.headers.get_all(name) or [])

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
        if host.lower() not in {f"{name}:{port}" for name in self.server.allowed_names}:
            return 403, "Host not allowed"
        return None

    def decoded_path(self) -> str | None:
        """The request's path, percent-decoded, or None when it is malformed. A NUL byte would end
        in open()'s ValueError and a traceback; ".." and backslashes would be silently dropped or
        reinterpreted. All are refused as malformed."""
        try:
            decoded = urllib.parse.unquote(self.url_path(), errors="strict")
        except UnicodeDecodeError:
            return None
        if "\0" in decoded or "\\" in decoded or ".." in decoded.split("/"):
            return None
        return decoded

    def leaves_site(self, path: str) -> bool:
        """Whether `path`, or the index page a folder is answered with, resolves through a link
        to somewhere outside the site. Links that stay inside it are followed."""
        candidates = [path, os.path.join(path, "index.html")] if os.path.isdir(path) else [path]
        real_site = self.server.real_site
        return not all(Path(os.path.realpath(candidate)).is_relative_to(real_site) for candidate in candidates)

    # GET and HEAD: send_head's reply body, or None when the reply is sent whole.

    def send_head(self):
        if refusal := self.host_refusal():
            self.send_error(*refusal)
            return None
        decoded = self.decoded_path()
        if decoded is None:
            self.send_error(400, "Bad path")
            return None
        reply = self.send_generated(decoded)
        return reply if reply is not None else self.send_site_file(decoded)

    def send_generated(self, decoded: str) -> io.BytesIO | None:
        """The room page, a teacher's page or its data when `decoded` names one, else None."""
        if self.server.lan and decoded == ROOM_PATH:
            return self.send_room(self.server.room_html)
        classroom = self.server.classroom
        if classroom is None:
            return None
        if (teachers := classroom.page_at(decoded)) is not None:
            return self.send_room(*teachers)
        try:
            data = classroom.data_at(decoded, self.headers.get("Authorization"))
        except ClassError as refusal:
            return self.send_refusal(refusal)
        return self.send_json(200, data) if data is not None else None

    def send_site_file(self, decoded: str):
        """The site's file at the request's path: a folder is its index page, and never listed."""
        path = self.translate_path(self.path)
        # The reply a missing file gets, so it does not tell whether the link's target exists.
        # Who can write into site/ can also swap a link between this check and the open.
        if self.leaves_site(path):
            return self.send_not_found()
        if os.path.isdir(path):
            if not decoded.endswith("/"):
                return super().send_head()  # its redirect to the folder's address with a slash
            # a folder is its index page; a folder without one is not listed, but a 404
            path = os.path.join(path, "index.html")
        # a file asked for as a folder (Python's issue 17324)
        if path.endswith("/"):
            return self.send_not_found()
        try:
            file = open(path, "rb")  # closed by the caller once sent
        except OSError:
            return self.send_not_found()
        try:
            return self.send_file(file, path, decoded)
        except BaseException:
            file.close()
            raise

    def send_not_found(self) -> None:
        self.send_error(404, "File not found")

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
        """`file` (open at `path`, asked for at `url_path`): gzipped where it pays, or a 304 when the
        browser's copy is this version."""
        status = os.fstat(file.fileno())
        version = (status.st_mtime_ns, status.st_size)
        compressible = Path(path).suffix.lower() in COMPRESSIBLE_SUFFIXES
        body = self.gzip_body(file, path, version) if compressible else None
        # strong: one tag per version of the file and per encoding of its bytes
        etag = f'"{status.st_mtime_ns:x}-{status.st_size:x}{"-gzip" if body is not None else ""}"'
        cache_headers = [("Cache-Control", cache_control(url_path)), ("ETag", etag)]
        if compressible:
            cache_headers.append(("Vary", "Accept-Encoding"))
        if etag_matches(self.header_list("If-None-Match"), etag):
            file.close()
            return self.send_not_modified(cache_headers)
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

    def gzip_body(self, file, path: str, version: tuple[int, int]) -> bytes | None:
        """The gzip copy of a compressible `file` when its size is worth it and the browser accepts
        gzip, else None; `file` is left at its start either way."""
        size = version[1]
        if not GZIP_MIN_BYTES <= size <= self.server.gzip_cache.cap_bytes:
            return None
        if not accepts_gzip(self.header_list("Accept-Encoding")):
            return None
        body = self.server.gzip_cache.compressed(path, version, file)
        file.seek(0)
        return body

    def send_not_modified(self, cache_headers: list[tuple[str, str]]) -> None:
        self.send_response(304)
        for header in cache_headers:
            self.send_header(*header)
        self.end_headers()

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
        if self.takes_posts():
            self.send_header("Set-Cookie", self.server.classroom.cookie(self.server.server_address[1]))
        if self.command not in ("GET", "HEAD"):
            # a body this server did not read must not be taken for the next request
            self.close_connection = True
        if self.allowed:
            self.send_header("Allow", self.allowed)
        super().end_headers()

    # POST: the teacher's view's only way in.

    def do_POST(self):
        if refusal := self.host_refusal():
            self.send_error(*refusal)
            return
        if not self.takes_posts() or self.url_path() not in POST_PATHS:
            self.refuse_method()
            return
        reply = self.take_post()
        if reply is not None:
            with reply:
                self.copyfile(reply, self.wfile)

    def take_post(self):
        """A post to the class (a student's answer, a teacher's change): its length checked,
        from a page of this site (Origin), then classroom.post."""
        if (refusal := self.post_refusal()) is not None:
            return self.send_refusal(refusal, close=True)
        # the serving loop waited for the body that this same length announced
        body = self.rfile.read(int(self.headers["Content-Length"]))
        try:
            reply = self.server.classroom.post(
                self.url_path(), self.client_address[0], self.headers.get("Authorization"), body
            )
        except ClassError as refusal:
            return self.send_refusal(refusal)
        if reply is not None:
            return self.send_json(200, reply)
        self.send_response(204)
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        return None

    def post_refusal(self) -> ClassError | None:
        """Why a post is refused before its body is read, or None to read it."""
        length = self.headers.get("Content-Length", "")
        if not (length.isascii() and length.isdigit()):
            return ClassError(411, "an answer's post must say its length")
        if int(length) > MAX_BODY_BYTES:
            return ClassError(413, f"an answer's post is at most {MAX_BODY_BYTES} bytes")
        # the Host was checked: a page of this site sends its own origin with every post
        if (self.headers.get("Origin") or "").lower() != f"http://{self.headers['Host'].strip().lower()}":
            return ClassError(403, "answers come from the lab's own pages")
        if self.headers.get_content_type() != "application/json":
            return ClassError(415, "an answer is posted as application/json")
        return None

    def refuse_method(self):
        self.allowed = "GET, HEAD, POST" if self.takes_posts() else "GET, HEAD"
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


def cache_control(url_path: str) -> str:
    """A year for a file named by its content in a folder the site's build writes such files to;
    revalidation for everything else."""
    hashed = url_path.startswith(HASHED_FOLDERS) and HASHED_NAME.search(url_path) is not None
    return IMMUTABLE if hashed else "no-cache"


class ReplyWriter(io.BufferedIOBase):
    """A reply's bytes written whole to the client, each write within the connection's timeout."""

    def __init__(self, connection: socket.socket):
        self.connection = connection

    def writable(self):
        return True

    def write(self, data):
        self.connection.sendall(data)
        return memoryview(data).nbytes

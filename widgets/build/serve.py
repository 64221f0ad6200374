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
import re
import socket
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from pathlib import Path

from widgets.build.classroom import MAX_BODY_BYTES, POST_PATHS, ClassError, Classroom
from widgets.build.room import ROOM_PATH, lan_addresses, lan_banner, room_page, terminal_has_colour, url_host

ROOT = Path(__file__).resolve().parents[2]  # the repository: widgets/build/serve.py
DEFAULT_PORT = 8765
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# A client has this long from the start of a request to the end of its headers, and then for each
# write of the reply. A browser needs milliseconds; an idle or trickling connection is closed
# instead of holding a handler.
REQUEST_TIMEOUT_S = 15
# Connections the kernel queues while every handler is busy, enough for a classroom opening the
# site at once (http.server's default of 5 dropped a tenth of 200 such requests).
REQUEST_QUEUE_SIZE = 256
# Requests handled at once, one thread each; further connections wait in the queue.
MAX_HANDLERS = 128
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
    at /room with `lan`, connections closed after `timeout_s` seconds, and one log line per error,
    none per hit. With a `classroom` (serve --class) every reply sets its cookie, POST /class/answers
    takes a student's answer, and /class and /class/notes are the teacher's pages, whose data
    needs the teacher's token (widgets/build/classroom.py). Any other method gets a 405."""
    real_site = Path(os.path.realpath(site))
    gzip_cache = gzip_cache if gzip_cache is not None else GzipCache()
    lan_names = (*map(url_host, addresses), url_host(hostname)) if lan else ()
    allowed_names = tuple(name.lower() for name in (*LOOPBACK_HOSTS, *lan_names))
    # made on its first request, when the served port is known
    room = functools.lru_cache(maxsize=1)(lambda port: room_page(list(addresses), hostname, port))

    class HeadDeadline(io.RawIOBase):
        """Reads of a client's socket that share one deadline while a request head arrives. A
        socket timeout alone applies to each read, so a client sending a byte now and then would
        hold its connection for ever."""

        def __init__(self, connection):
            self.connection = connection
            self.deadline: float | None = None

        def readable(self):
            return True

        def readinto(self, buffer):
            if self.deadline is not None:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("the request head did not arrive in time")
                self.connection.settimeout(remaining)
            return self.connection.recv_into(buffer)

    class Handler(http.server.SimpleHTTPRequestHandler):
        timeout = timeout_s  # StreamRequestHandler.setup puts it on the socket
        # source maps are JSON; mimetypes knows no type for them
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".map": "application/json"}

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def setup(self):
            super().setup()
            # The socket stays open while a file made from it is, so the one setup made is closed.
            self.rfile.close()
            self.head = HeadDeadline(self.connection)
            self.rfile = io.BufferedReader(self.head)

        def handle_one_request(self):
            self.allowed = None  # the methods a 405 names
            # a timeout ends in the base class, which closes the connection without a reply
            self.head.deadline = time.monotonic() + self.timeout
            super().handle_one_request()

        def parse_request(self):
            parsed = super().parse_request()
            self.head.deadline = None
            self.connection.settimeout(self.timeout)
            return parsed

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
            if classroom is None or urllib.parse.urlsplit(self.path).path not in POST_PATHS:
                self.refuse_method()
                return
            reply = self.take_post()
            if reply is not None:
                with reply:
                    self.copyfile(reply, self.wfile)

        def take_post(self):
            """A post to the class (a student's answer, a teacher's change): its length checked before
            a byte of it is read, read within the request's deadline, from a page of this site
            (Origin), then classroom.post."""
            length = self.headers.get("Content-Length", "")
            if self.headers.get("Transfer-Encoding") or not (length.isascii() and length.isdigit()):
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
            self.head.deadline = time.monotonic() + self.timeout
            try:
                body = self.rfile.read(int(length))
            except (TimeoutError, OSError):
                self.close_connection = True
                return None
            finally:
                self.head.deadline = None
            if len(body) != int(length):
                self.close_connection = True
                return None
            path = urllib.parse.urlsplit(self.path).path
            try:
                reply = classroom.post(path, self.client_address[0], self.headers.get("Authorization"), body)
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


def site_server(
    site: Path,
    address: tuple[str, int],
    *,
    lan: bool = False,
    addresses: list[str] | None = None,
    hostname: str | None = None,
    timeout_s: float = REQUEST_TIMEOUT_S,
    max_handlers: int = MAX_HANDLERS,
    gzip_cache_bytes: int = GZIP_CACHE_BYTES,
    classroom: Classroom | None = None,
):
    """A server for `site` listening on `address` (serve_forever runs it; an IPv6 address such as
    "::" also takes IPv4 where the system allows), with site_handler's rules, at most `max_handlers`
    requests handled at once and REQUEST_QUEUE_SIZE more queued. With `lan` the Host header may
    also name each of `addresses` (lan_addresses() when None) or `hostname` (this machine's when
    None), and /room shows them. With a `classroom` it is the teacher's view too (site_handler).
    Raises OSError when the address cannot be bound."""

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        request_queue_size = REQUEST_QUEUE_SIZE
        daemon_threads = True
        # Ctrl+C stops at once instead of waiting for open connections to time out.
        block_on_close = False
        # On Windows SO_REUSEADDR lets a second server bind a port that is in use, which would
        # hide the port-in-use message; elsewhere it only allows a restart during TIME_WAIT.
        allow_reuse_address = os.name != "nt"

        def __init__(self):
            self.lan_addresses = (lan_addresses() if addresses is None else list(addresses)) if lan else []
            self.hostname = (socket.gethostname() if hostname is None else hostname) if lan else ""
            self.gzip_cache = GzipCache(gzip_cache_bytes)
            names = {"addresses": tuple(self.lan_addresses), "hostname": self.hostname}
            handler = site_handler(
                site, lan=lan, **names, gzip_cache=self.gzip_cache, timeout_s=timeout_s, classroom=classroom
            )
            super().__init__(address, handler)
            self.free_handlers = threading.BoundedSemaphore(max_handlers)

        def server_bind(self):
            if self.address_family == socket.AF_INET6:
                # one socket for both families, as http.server's own DualStackServer does
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

        def process_request(self, request, client_address):
            # Waiting here for a free handler leaves later connections in the kernel's queue,
            # which bounds the server's threads however many clients connect.
            self.free_handlers.acquire()
            try:
                super().process_request(request, client_address)
            except BaseException:
                self.free_handlers.release()
                raise

        def process_request_thread(self, request, client_address):
            try:
                super().process_request_thread(request, client_address)
            finally:
                self.free_handlers.release()

        def handle_error(self, request, client_address):
            # A browser that drops its connection while a file is on its way (a student leaving a
            # page before it has loaded) is no fault of the server's: nothing for the terminal.
            if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
                super().handle_error(request, client_address)

    return Server()


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
    try:
        server = site_server(site, (bind, port), lan=lan, addresses=addresses, hostname=hostname, classroom=classroom)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            other = port + 1 if port < 65535 else DEFAULT_PORT
            raise ServeError(f"port {port} is in use on {where}; pick another with: {command} --port {other}") from None
        raise ServeError(
            f"cannot serve on {where} port {port} ({error.strerror}); try another with: {command} --port N"
        ) from None
    port = server.server_address[1]  # the one the system chose when asked for port 0
    try:
        if lan:
            print(lan_banner(server.lan_addresses, server.hostname, port, colour=terminal_has_colour()))
        if classroom is not None:
            print(class_banner(classroom, port))
        print(f"serving {site} at http://127.0.0.1:{port}/ (Ctrl+C to stop)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()


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

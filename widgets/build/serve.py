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
import ipaddress
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from pathlib import Path

import segno

from lab.text import shown

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
# The page --lan answers with the QR code and every address; it is not a file of the site.
ROOM_PATH = "/room"

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
IMMUTABLE = "public, max-age=31536000, immutable"
# Linux's ioctl request for an interface's IPv4 address (linux/sockios.h).
SIOCGIFADDR = 0x8915
# Modules of white space around the QR code, as the QR standard asks, so a camera finds its edges.
QR_QUIET_ZONE = 4
# Two rows of modules per line of text (dark top, dark bottom): square modules in a terminal.
HALF_BLOCKS = {(0, 0): " ", (1, 0): "\u2580", (0, 1): "\u2584", (1, 1): "\u2588"}


class ServeError(RuntimeError):
    """The site could not be served; the message is one line that says why and what to do."""


# This machine's addresses, as the room sees them.


def room_addresses(candidates: list[str]) -> list[str]:
    """The addresses among `candidates` another machine could open a URL on: IPv4 first, each
    family in the order given, once each, in their canonical spelling."""
    kept: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for address in map(ipaddress.ip_address, candidates):
        # fe80::/10 is reachable only with a zone id naming this machine's interface (fe80::1%wlan0),
        # which means nothing on a student's machine and which browsers refuse in a URL.
        link_local = address.version == 6 and address.is_link_local
        if not (link_local or address.is_loopback or address.is_unspecified or address.is_multicast or address in kept):
            kept.append(address)
    # Phones and laptops on a room's Wi-Fi almost always have IPv4; the QR code takes the first.
    return [str(address) for address in sorted(kept, key=lambda address: address.version)]


def addresses_from_if_inet6(text: str) -> list[str]:
    """Every address in the text of /proc/net/if_inet6 (one a line: 32 hex digits, then fields)."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if fields and re.fullmatch(r"[0-9a-fA-F]{32}", fields[0]):
            found.append(str(ipaddress.IPv6Address(bytes.fromhex(fields[0]))))
    return found


def _from_kernel() -> list[str]:
    """Linux: each interface's IPv4 address by ioctl (its primary one: an alias added with
    `ip addr add` is not asked for), and every IPv6 address from /proc/net/if_inet6."""
    import fcntl  # POSIX only; this runs on Linux only

    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # never sends: only asked
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])  # struct ifreq: the name, then room
            try:
                reply = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
            except OSError:  # an interface without an IPv4 address
                continue
            found.append(socket.inet_ntoa(reply[20:24]))  # ifr_addr's sin_addr
    try:
        found += addresses_from_if_inet6(Path("/proc/net/if_inet6").read_text(encoding="ascii"))
    except OSError:  # a kernel without IPv6
        pass
    return found


def _from_hostname() -> list[str]:
    """Elsewhere (macOS, Windows): the addresses this machine's name resolves to."""
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM)
    except OSError:
        return []
    return [str(info[4][0]).partition("%")[0] for info in infos]


def lan_addresses() -> list[str]:
    """Every non-loopback address of this machine that a machine in the room could reach, as the
    operating system lists them (room_addresses says which are left out)."""
    return room_addresses(_from_kernel() if sys.platform.startswith("linux") else _from_hostname())


def url_host(name: str) -> str:
    """An address or name as the host part of a URL: IPv6 in brackets."""
    return f"[{name}]" if ":" in name else name


def site_url(name: str, port: int) -> str:
    return f"http://{url_host(name)}:{port}/"


# The QR code, in the terminal and on the room page.


def qr_code(url: str) -> segno.QRCode:
    # a full QR code (segno.make picks a Micro QR for short text, which phone cameras do not read)
    # at level M, which still reads with a seventh of it smudged or glared on a projector
    return segno.make_qr(url, error="m")


def terminal_qr(url: str, *, colour: bool) -> str:
    """The QR code of `url` as lines of half blocks, two rows of modules a line. With `colour` the
    modules are drawn black on white whatever the terminal's theme; without, in the terminal's
    own text colour, which reads right on a light background (and on paper)."""
    rows = [list(row) for row in qr_code(url).matrix_iter(border=QR_QUIET_ZONE)]
    if len(rows) % 2:
        rows.append([0] * len(rows[0]))  # the last line's lower half is light
    pairs = zip(rows[::2], rows[1::2], strict=True)
    lines = ["".join(HALF_BLOCKS[pair] for pair in zip(top, bottom, strict=True)) for top, bottom in pairs]
    if colour:
        lines = [f"\x1b[30;107m{line}\x1b[0m" for line in lines]
    return "\n".join(lines)


def terminal_has_colour() -> bool:
    """Whether standard output is a terminal that draws ANSI colours: not a file or pipe, not
    NO_COLOR, and on Windows only Windows Terminal (the old console shows the codes as text)."""
    if not sys.stdout.isatty() or "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return os.name != "nt" or "WT_SESSION" in os.environ


NO_ADDRESS = (
    "no network address found on this machine: join the room's Wi-Fi or network, "
    "then run python3 labctl.py serve --lan again"
)
HOSTNAME_NOTE = "this machine's name: works where the room's network resolves it"


def lan_banner(addresses: list[str], hostname: str, port: int, *, colour: bool) -> str:
    """What serve --lan prints before it starts: a warning, every address with the port, and the
    QR code of the first."""
    lines = [
        "warning: --lan serves the site to every machine that can reach this one; use it on a "
        "workshop network you trust",
    ]
    if addresses:
        lines.append("open one of these on a laptop or phone in the room:")
        lines += [f"  {site_url(address, port)}" for address in addresses]
    else:
        lines.append(NO_ADDRESS)
    lines.append(f"  {site_url(hostname, port)}  ({HOSTNAME_NOTE})")
    if addresses:
        lines.append(f"or scan this code for {site_url(addresses[0], port)}:")
        lines.append(terminal_qr(site_url(addresses[0], port), colour=colour))
    lines.append(f"the code and every address on one page, for the projector: http://127.0.0.1:{port}{ROOM_PATH}")
    return "\n".join(lines)


# The colours of the lab's own pages (the index, /room): the reader's theme, text above 7:1 in both.
THEME_CSS = """:root { color-scheme: light dark; }
body { color: #1a1a1a; background: #ffffff; }
a { color: #005a8c; }
@media (prefers-color-scheme: dark) {
  body { color: #e8e6e3; background: #181a1b; }
  a { color: #7cc4f4; }
}"""

ROOM_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Join the four-bit lab</title>
<style>
{theme}
/* sizes grow with the screen, so the back row of a room reads the projector as a phone reads it */
body {{ font-family: system-ui, sans-serif; font-size: clamp(20px, 1.5vw, 32px); line-height: 1.5; margin: 0; padding: 1rem max(1rem, 3vw); }}
h1 {{ font-size: clamp(28px, 3vw, 60px); line-height: 1.2; margin: 0.5rem 0 1rem; }}
/* a phone stacks the code above the addresses; a wide screen sets them side by side */
.room {{ display: flex; flex-wrap: wrap; gap: 1rem 4vw; align-items: center; }}
.room > div {{ flex: 1 1 18rem; min-width: 0; }}
/* an address fits one line of a 390 px phone; a longer IPv6 one wraps inside the page */
.addresses {{ list-style: none; padding: 0; font-family: ui-monospace, monospace; font-size: clamp(18px, 2.4vw, 48px); overflow-wrap: anywhere; }}
.addresses li {{ margin: 0.3rem 0; }}
.note {{ display: block; font-family: system-ui, sans-serif; font-size: clamp(18px, 1.2vw, 28px); }}
/* dark modules on white in both themes, as a camera needs; most of a projector's height */
.room > .qr {{ flex: 0 0 auto; width: min(100%, 72vh); }}
.qr svg {{ display: block; width: 100%; height: auto; background: #ffffff; shape-rendering: crispEdges; }}
</style>
</head>
<body>
<h1>Open the four-bit lab on your own device</h1>
<div class="room">
{qr}
<div>
<p>{invitation}</p>
<ul class="addresses">
{links}
</ul>
</div>
</div>
</body>
</html>
"""


def room_page(addresses: list[str], hostname: str, port: int) -> bytes:
    """The /room page: the QR code of the first address and every address, all shown() (the
    hostname is whatever the machine was named), with no address from anywhere else."""
    urls = [site_url(address, port) for address in addresses]
    links = [f'<li><a href="{shown(url)}">{shown(url)}</a></li>' for url in urls]
    hostname_url = site_url(hostname, port)
    links.append(
        f'<li><a href="{shown(hostname_url)}">{shown(hostname_url)}</a> <span class="note">({shown(HOSTNAME_NOTE)})</span></li>'
    )
    if urls:
        svg = qr_code(urls[0]).svg_inline(border=QR_QUIET_ZONE, dark="#000000", light="#ffffff", omitsize=True)
        qr = f'<div class="qr" role="img" aria-label="QR code for {shown(urls[0])}">{svg}</div>'
        invitation = "Scan the code with a phone's camera, or type an address into a browser on this room's network:"
    else:
        qr = ""
        invitation = shown(NO_ADDRESS)
    return ROOM_PAGE.format(theme=THEME_CSS, qr=qr, invitation=invitation, links="\n".join(links)).encode("utf-8")


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
) -> type:
    """A quiet static-file handler for `site`: no folder listings, one well-formed Host header that
    is a loopback name (with `lan` also one of `addresses` or `hostname`) with the served port,
    nothing through a link that leaves `site`, 400 for a path that does not decode, text files
    gzipped from `gzip_cache` when the browser accepts it, cache headers and ETags, the room page
    at /room with `lan`, connections closed after `timeout_s` seconds, and one log line per error,
    none per hit."""
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

        def send_room(self, page: bytes):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            # the page holds its own style and inline SVG, and loads nothing
            self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
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
            hashed = url_path.startswith("/assets/") and HASHED_NAME.search(url_path) is not None
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
):
    """A server for `site` listening on `address` (serve_forever runs it; an IPv6 address such as
    "::" also takes IPv4 where the system allows), with site_handler's rules, at most `max_handlers`
    requests handled at once and REQUEST_QUEUE_SIZE more queued. With `lan` the Host header may
    also name each of `addresses` (lan_addresses() when None) or `hostname` (this machine's when
    None), and /room shows them. Raises OSError when the address cannot be bound."""

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
            handler = site_handler(site, lan=lan, **names, gzip_cache=self.gzip_cache, timeout_s=timeout_s)
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

    return Server()


def serve(
    site: Path = ROOT / "site",
    port: int = DEFAULT_PORT,
    *,
    lan: bool = False,
    addresses: list[str] | None = None,
    hostname: str | None = None,
) -> None:
    """Serve the built site on 127.0.0.1 only, or on every interface with `lan` (for workshops),
    printing `addresses` (lan_addresses() when None) and `hostname` (this machine's when None).
    Raises ServeError when there is no built site or the port cannot be used."""
    if not (site / "index.html").exists():
        raise ServeError(f"{site} has no index.html; build the site first (python3 labctl.py site)")
    command = "python3 labctl.py serve" + (" --lan" if lan else "")
    bind = where = "127.0.0.1"
    if lan:
        # an IPv6 address is printed only where the server listens on IPv6 as well as IPv4
        dual_stack = socket.has_dualstack_ipv6()
        bind, where = ("::" if dual_stack else "0.0.0.0"), "every interface"
        addresses = [
            name for name in (lan_addresses() if addresses is None else addresses) if dual_stack or ":" not in name
        ]
    try:
        server = site_server(site, (bind, port), lan=lan, addresses=addresses, hostname=hostname)
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
        print(f"serving {site} at http://127.0.0.1:{port}/ (Ctrl+C to stop)", flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()


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
    """`serve`'s words after the command itself ([PORT | --port PORT] [--lan]); serves `site`
    (the repository's site/ when None)."""
    lan = "--lan" in argv
    port = requested_port([arg for arg in argv if arg != "--lan"])
    if port is None:
        print(
            f"serve takes a port from 1 to 65535 (PORT or --port PORT) and --lan, got {' '.join(argv)!r}",
            file=sys.stderr,
        )
        return 2
    try:
        serve(site if site is not None else ROOT / "site", port, lan=lan)
    except ServeError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

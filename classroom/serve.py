"""Serve the built site: a quiet static server for loopback, and for a workshop room with --lan.

    python3 labctl.py serve          # site/ on 127.0.0.1 only
    python3 labctl.py serve --lan    # for a workshop: every interface, this machine's addresses only

`labctl.py serve` runs `python -m classroom.serve`, which hands its words to main() (as does
`python -m publish.site serve`).
With --lan the server prints every address of this machine that another machine in the room could
use, read from the operating system (lan_addresses), a QR code for the first one, and answers
/room with a page that shows the same code and every address, for the projector. The Host header
must name one of those addresses, this machine's name or a loopback name, each with the served
port: anything else is refused, as on loopback, so a page on another name that resolves here (DNS
rebinding) cannot read the site as its own origin.

The addresses, the QR code and the /room page are classroom/room.py's. SiteServer's one loop reads
every request whole; what a request gets (the Host check, gzip, cache headers, the teacher's view)
is SiteHandler's, in classroom/handler.py, with the settings SiteServer holds.
"""

from __future__ import annotations

import errno
import functools
import http.server
import os
import queue
import re
import selectors
import signal
import socket
import sys
import threading
import time
from collections import Counter, OrderedDict
from pathlib import Path

from classroom.handler import GZIP_CACHE_BYTES, LOOPBACK_HOSTS, REQUEST_TIMEOUT_S, GzipCache, SiteHandler
from classroom.room import lan_addresses, lan_banner, room_page, terminal_has_colour, url_host
from classroom.teacher_view import MAX_BODY_BYTES, Classroom

ROOT = Path(__file__).resolve().parents[1]  # the repository: classroom/serve.py
DEFAULT_PORT = 8765
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


class ServeError(RuntimeError):
    """The site could not be served; the message is one line that says why and what to do."""


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
    """The built site on `address`, with SiteHandler's rules. One loop (serve_forever) accepts
    every connection and reads its request without blocking; only a request that has arrived whole
    is handed to a handler thread, so idle and trickling connections cost a socket and a buffer,
    never a thread. See site_server for the settings."""

    request_queue_size = REQUEST_QUEUE_SIZE
    # On Windows SO_REUSEADDR lets a second server bind a port that is in use, which would
    # hide the port-in-use message; elsewhere it only allows a restart during TIME_WAIT.
    allow_reuse_address = os.name != "nt"

    def __init__(self, site: Path, address: tuple[str, int], *, lan, addresses, hostname, classroom, limits):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        # what SiteHandler reads for each request: the site, the names it answers to, the room
        # page (lan), the gzip copies, each write's timeout, and the teacher's view (classroom)
        self.site, self.real_site = site, Path(os.path.realpath(site))
        self.lan, self.classroom = lan, classroom
        self.lan_addresses = (lan_addresses() if addresses is None else list(addresses)) if lan else []
        self.hostname = (socket.gethostname() if hostname is None else hostname) if lan else ""
        lan_names = (*map(url_host, self.lan_addresses), url_host(self.hostname)) if lan else ()
        self.allowed_names = tuple(name.lower() for name in (*LOOPBACK_HOSTS, *lan_names))
        self.gzip_cache = GzipCache(limits["gzip_cache_bytes"])
        self.reply_timeout_s = limits["timeout_s"]
        self.head_deadline_s = limits["head_deadline_s"]
        self.max_handlers, self.max_handlers_per_client = limits["max_handlers"], limits["max_handlers_per_client"]
        self.max_waiting, self.max_waiting_per_client = limits["max_waiting"], limits["max_waiting_per_client"]
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
        super().__init__(address, SiteHandler)

    @functools.cached_property
    def room_html(self) -> bytes:
        """The /room page (lan), made on its first request, when the served port is known."""
        return room_page(list(self.lan_addresses), self.hostname, self.server_address[1])

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
    "::" also takes IPv4 where the system allows), with SiteHandler's rules. A connection has
    `head_deadline_s` (HEAD_DEADLINE_S, or `timeout_s` if shorter) from its accept to send its
    request whole; at most `max_waiting` connections
    (`max_waiting_per_client` from one address) wait for that or for a handler; at most
    `max_handlers` requests (`max_handlers_per_client` from one address) are handled at once, each
    write of a reply within `timeout_s`. With `lan` the Host header may also name each of
    `addresses` (lan_addresses() when None) or `hostname` (this machine's when None), and /room
    shows them. With a `classroom` it is the teacher's view too (SiteHandler).
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

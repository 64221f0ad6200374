"""This machine as a workshop room sees it: the addresses a laptop or phone could open, a QR code of
the first for the terminal and for the /room page, and the colours of the lab's own small pages.

`serve --lan` (classroom/serve.py) prints lan_banner and answers /room with room_page. The
addresses are read from the operating system, never guessed, and every name the machine has is
written into the page through lab.text.shown.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import struct
import sys
from pathlib import Path

import segno

from lab.text import shown

# The page --lan answers with the QR code and every address; it is not a file of the site.
ROOM_PATH = "/room"
# Linux's ioctl request for an interface's IPv4 address (linux/sockios.h).
SIOCGIFADDR = 0x8915
# Modules of white space around the QR code, as the QR standard asks, so a camera finds its edges.
QR_QUIET_ZONE = 4
# Two rows of modules per line of text (dark top, dark bottom): square modules in a terminal.
HALF_BLOCKS = {(0, 0): " ", (1, 0): "\u2580", (0, 1): "\u2584", (1, 1): "\u2588"}


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

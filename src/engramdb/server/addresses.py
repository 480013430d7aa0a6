"""Whether an address to listen on is this machine's loopback (no web framework needed: the
CLI asks before it starts a server, the app when it builds its guard)."""

from __future__ import annotations

import ipaddress
import socket


def is_loopback(host: str) -> bool:
    """`localhost`, a loopback address (``127.0.0.1``, ``[::1]``), or a name that resolves
    only to loopback addresses. An empty host is not: a socket bound to it listens on every
    interface."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
        except OSError:
            return False

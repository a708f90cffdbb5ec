"""Network addresses as settings and command lines name them."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP address, bracketed IPv6 included, or a name) is this machine: a loopback address or
    ``localhost``; any other name counts as remote."""
    host = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host.lower() == "localhost"

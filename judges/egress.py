"""What a judge may reach and send: the endpoints it may call and the variables it may name as keys.
Checked when a judge is loaded (judges.config), again in the worker before anything is sent
(judges.providers.base.env_value, the HTTP clients' connect-time guard below), so a judge stored
before these rules, or a name whose DNS answer changes after the load, still cannot pass.

Endpoints
- always refused: link-local and cloud-metadata addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254,
  100.100.100.200, metadata.google.internal, ...), unspecified and multicast addresses, and Concord's
  own database, Redis and web ports;
- loopback and private addresses: allowed in development (DEBUG, CONCORD_LOCAL_SERVING: `make run`,
  and the tests), in production only where CONCORD_JUDGE_PRIVATE_ENDPOINTS lists them (host names,
  addresses or networks such as 10.20.0.0/16);
- a host name is resolved and every address it resolves to must pass; at connect time the client
  connects to the very address it checked (DNS rebinding gets nothing).

Key variables (`api_key_env`, `backend_options.headers_env`): a name that ends in `_API_KEY` or starts
with `JUDGE_`, or one CONCORD_JUDGE_KEY_VARIABLES lists; never Concord's own (SECRET_KEY, DATABASE_URL,
REDIS_URL, ...), listed or not.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urlsplit

from judges.backends.errors import PermanentBackendError

KEY_RULE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9_]*_API_KEY|JUDGE_[A-Za-z0-9_]+)$")
KEY_RULE_WORDS = "a name that ends in _API_KEY or starts with JUDGE_, or one CONCORD_JUDGE_KEY_VARIABLES lists"
# Concord's own variables and those of the services and clouds it runs on: never a judge's key.
OWN_VARIABLES = frozenset({"SECRET_KEY", "DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL",
                           "EMAIL_HOST_PASSWORD", "EMAIL_URL", "SENTRY_DSN"})
OWN_PREFIXES = ("DATABASE_", "REDIS_", "CELERY_", "DJANGO_", "POSTGRES", "PG", "AWS_", "GOOGLE_APPLICATION",
                "AZURE_CLIENT", "CONCORD_")

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                            "instance-data.ec2.internal", "metadata.azure.internal", "metadata.tencentyun.com"})
ALWAYS_REFUSED = tuple(ipaddress.ip_network(n) for n in (
    "169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32", "0.0.0.0/8", "::/128",
    "224.0.0.0/4", "ff00::/8", "255.255.255.255/32"))
OWN_DEFAULT_PORTS = (5432, 6379)  # PostgreSQL's and Redis's own, refused on any non-public address


class EndpointRefused(PermanentBackendError):
    """An endpoint or key variable a judge may not use; the message says why and how to allow it, never more
    (nothing was sent, so nothing the address would have answered)."""


def _settings() -> Any:
    try:
        from django.conf import settings

        return settings if settings.configured else None
    except ImportError:  # pragma: no cover - Django is a dependency
        return None


def _setting(name: str, default: Any) -> Any:
    s = _settings()
    return getattr(s, name, default) if s is not None else default


# --------------------------------------------------------------------------------------- key variables

def key_variable_problem(name: Any) -> str | None:
    """Why `name` may not be a judge's key variable, or None."""
    if not isinstance(name, str) or not name:
        return "must be the NAME of an environment variable"
    upper = name.upper()
    if upper in OWN_VARIABLES or (upper.startswith(OWN_PREFIXES) and not KEY_RULE.match(name)):
        return f"{name} is one of Concord's own variables, never a judge's key; use {KEY_RULE_WORDS}"
    listed = {str(n) for n in _setting("JUDGE_KEY_VARIABLES", ())}
    if KEY_RULE.match(name) or name in listed:
        return None
    return f"{name} is not a judge key variable: use {KEY_RULE_WORDS}"


def check_key_variable(name: str) -> None:
    if problem := key_variable_problem(name):
        raise EndpointRefused(problem)


# --------------------------------------------------------------------------------------------- endpoints

@dataclass(frozen=True)
class Policy:
    local_open: bool  # development: loopback and private addresses allowed
    listed: tuple[str, ...]  # production: the private hosts, addresses and networks allowed
    own: frozenset[tuple[str, int]]  # (address, port) of Concord's database, Redis and web server
    own_ports: frozenset[int]  # the database's and Redis's: refused on any address that is not public
    web_port: int = 8000  # Concord's own web server: refused on loopback


def _own_services() -> tuple[frozenset[tuple[str, int]], frozenset[int], int]:
    s = _settings()
    targets: list[tuple[str, int]] = []
    if s is not None:
        db = (getattr(s, "DATABASES", {}) or {}).get("default", {})
        targets.append((str(db.get("HOST") or "127.0.0.1"), int(db.get("PORT") or 5432)))
        redis = urlsplit(str(getattr(s, "REDIS_URL", "") or ""))
        if redis.hostname:
            targets.append((redis.hostname, redis.port or 6379))
    ports = {p for _, p in targets} | set(OWN_DEFAULT_PORTS)
    web = int(os.environ.get("PORT") or 8000)  # config/launcher.py, gunicorn.conf.py
    targets.append(("127.0.0.1", web))
    own: set[tuple[str, int]] = set()
    for host, port in targets:
        if host.startswith("/"):  # a Unix socket: nothing to reach over TCP
            continue
        own.update((a, port) for a in _addresses(host, port, quiet=True))
    return frozenset(own), frozenset(ports), web


def policy() -> Policy:
    own, ports, web = _own_services()
    listed = tuple(str(x) for x in _setting("JUDGE_PRIVATE_ENDPOINTS", ()))
    return Policy(local_open=bool(_setting("JUDGE_LOCAL_ENDPOINTS", False)), listed=listed, own=own, own_ports=ports,
                  web_port=web)


def _addresses(host: str, port: int, *, quiet: bool = False) -> list[str]:
    """Every address `host` resolves to (a literal address, in any of its spellings, to itself)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        if quiet:
            return []
        raise
    return sorted({str(info[4][0]).split("%", 1)[0] for info in infos})


NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address as it will be reached: an IPv6 address that carries an IPv4 one (::ffff:169.254.169.254,
    NAT64's 64:ff9b::a9fe:a9fe, 6to4's 2002:a9fe:a9fe::) counts as that IPv4 address."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            return ip.ipv4_mapped
        if ip in NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour:
            return ip.sixtofour
    return ip


def _listed(host: str, ip: Any, listed: Iterable[str]) -> bool:
    for entry in listed:
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == host.lower():
            return True
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def address_problem(host: str, address: str, port: int, pol: Policy) -> str | None:
    """Why the judge may not connect to `address`:`port` (which `host` resolved to), or None."""
    try:
        ip = _ip(address)
    except ValueError:
        return f"{host} did not resolve to an address"
    if any(ip in net for net in ALWAYS_REFUSED if net.version == ip.version):
        return f"{host} is a link-local, cloud-metadata or unspecified address, never a judge's endpoint"
    public = ip.is_global
    if ((str(ip), port) in pol.own or (not public and port in pol.own_ports)
            or ((ip.is_loopback or ip.is_unspecified) and port == pol.web_port)):
        return f"{host}:{port} is Concord's own database, Redis or web server, never a judge's endpoint"
    if public or pol.local_open or _listed(host, ip, pol.listed):
        return None
    return (f"{host} is a loopback or private address: list it in CONCORD_JUDGE_PRIVATE_ENDPOINTS to allow it "
            f"in production")


def endpoint_problem(url: str, *, resolve: bool = True, pol: Policy | None = None) -> str | None:
    """Why a judge may not call `url`, or None. A name that does not resolve passes here (the load may
    run where the judge's network is not); the worker checks again when it connects."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return "not a valid URL"
    if not host:
        return "the URL names no host"
    port = port or (443 if parts.scheme == "https" else 80)
    name = host.rstrip(".").lower()
    if name in METADATA_HOSTS:
        return f"{host} is a cloud-metadata address, never a judge's endpoint"
    pol = pol or policy()
    if not resolve:
        try:
            addresses = [str(_ip(name.strip("[]")))]
        except ValueError:
            return None
    else:
        try:
            addresses = _addresses(name, port)
        except (socket.gaierror, UnicodeError, OSError):
            return None
    for address in addresses:
        if problem := address_problem(host, address, port, pol):
            return problem
    return None


def check_endpoint(url: str) -> None:
    if problem := endpoint_problem(url):
        raise EndpointRefused(f"endpoint refused: {problem}")


# ------------------------------------------------------------------------------- connect-time guard

def checked_addresses(host: str, port: int, pol: Policy) -> list[str]:
    """The addresses to connect to for `host`, IPv4 first: resolved once, every answer checked, and only
    these tried (so the connection goes where the check looked). EndpointRefused when any answer is refused."""
    name = host.strip("[]").rstrip(".").lower()
    if name in METADATA_HOSTS:
        raise EndpointRefused(f"endpoint refused: {host} is a cloud-metadata address, never a judge's endpoint")
    try:
        addresses = _addresses(name, port)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise OSError(f"cannot resolve {host}") from exc
    for address in addresses:
        if problem := address_problem(host, address, port, pol):
            raise EndpointRefused(f"endpoint refused: {problem}")
    return sorted(addresses, key=lambda a: ":" in a)


def _connect_errors() -> tuple[type[BaseException], ...]:
    """What a failed connection to one address raises: the next checked address is tried."""
    import httpcore

    return (OSError, httpcore.ConnectError, httpcore.ConnectTimeout)


def guarded_backend(inner: Any, pol: Policy | None = None, *, sync: bool = False) -> Any:
    """An httpcore network backend that connects only to checked addresses (wraps `inner`)."""
    pol = pol or policy()
    if sync:
        class SyncGuard:
            def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                            socket_options: Any = None) -> Any:
                *others, last = checked_addresses(host, port, pol)
                for address in others:
                    try:
                        return inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                 socket_options=socket_options)
                    except _connect_errors():
                        continue
                return inner.connect_tcp(last, port, timeout=timeout, local_address=local_address,
                                         socket_options=socket_options)

            def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
                raise EndpointRefused("endpoint refused: a judge connects over TCP only")

            def sleep(self, seconds: float) -> None:
                inner.sleep(seconds)

        return SyncGuard()

    class AsyncGuard:
        async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                              local_address: str | None = None, socket_options: Any = None) -> Any:
            import anyio

            *others, last = await anyio.to_thread.run_sync(checked_addresses, host, port, pol)
            for address in others:  # as the resolver's answers are tried in turn, but only the checked ones
                try:
                    return await inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                   socket_options=socket_options)
                except _connect_errors():
                    continue
            return await inner.connect_tcp(last, port, timeout=timeout, local_address=local_address,
                                           socket_options=socket_options)

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise EndpointRefused("endpoint refused: a judge connects over TCP only")

        async def sleep(self, seconds: float) -> None:
            await inner.sleep(seconds)

    return AsyncGuard()


def guard_transport(transport: Any, *, sync: bool = False) -> Any:
    """`transport` (an httpx HTTP transport) with its connection pool's backend guarded."""
    pool = transport._pool  # httpx builds the pool; only its network backend is swapped
    pool._network_backend = guarded_backend(pool._network_backend, sync=sync)
    return transport

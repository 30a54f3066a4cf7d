"""Opening a farm: an embedded Dask cluster on this workstation (a
scheduler and one single-threaded worker process per member, a Dask
SpecCluster, the spec-driven LocalCluster), or an existing cluster's
scheduler whose workers run `acltuner farm worker`; then every member's hello,
which must agree on the board class and the engine."""
from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections import Counter
from collections.abc import Iterator
from urllib.parse import urlsplit

from acltuner.board.model import Board
from acltuner.farm.dispatch import RESOURCE, Farm, FarmLauncher
from acltuner.farm.members import MEMBER_ENV, FarmError, Member

# Starting a worker process imports acltuner and opens a launcher (an ssh
# connection, qemu): generous on a busy machine.
START_TIMEOUT_S = 120.0


def worker_options(member: Member) -> dict:
    """A member's worker: one thread, the board resource once, its member in its environment."""
    return {"nthreads": 1, "name": member.name, "resources": {RESOURCE: 1},
            "env": {MEMBER_ENV: member.to_env()}, "memory_limit": 0}


def listen_host(scheduler: str, listen_address: str | None) -> str:
    """The interface a worker of `scheduler` (tcp:// or tls://HOST:PORT)
    listens on: `listen_address`, else 127.0.0.1 for a scheduler on this
    machine's loopback; a scheduler elsewhere needs listen_address."""
    parts = urlsplit(scheduler)
    if parts.scheme not in ("tcp", "tls") or not parts.hostname:
        raise FarmError(f"scheduler {scheduler}: expected tcp://HOST:PORT or tls://HOST:PORT")
    if listen_address:
        return listen_address
    try:
        loopback = parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:  # a host name
        loopback = False
    if not loopback:
        raise FarmError(f"scheduler {scheduler} is not on this machine's loopback: give "
                        f"--listen-address with the address of the interface that reaches it "
                        f"(the worker listens there only)")
    return "127.0.0.1"


def farm_security(ca_file: str | None, cert: str | None, key: str | None):
    """Dask's TLS for every role (scheduler, workers, client) from one CA and
    one certificate with its key, or None when none is given."""
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    missing = [name for name, value in given.items() if not value]
    if missing:
        raise FarmError(f"TLS needs --tls-ca-file, --tls-cert and --tls-key: "
                        f"{', '.join(missing)} missing")
    from distributed import Security
    return Security(tls_ca_file=ca_file, require_encryption=True,
                    **{f"tls_{role}_{part}": value for role in ("client", "scheduler", "worker")
                       for part, value in (("cert", cert), ("key", key))})


def embedded_cluster(members: list[Member], security=None):
    """The farm's scheduler and a worker per member, all on 127.0.0.1 (over
    TLS with `security`)."""
    from distributed import Nanny, Scheduler, SpecCluster
    on = {"host": "127.0.0.1", "protocol": "tls" if security else "tcp",
          "security": security}
    # Dask's own log lines (workers starting, stopping) only on trouble.
    workers = {m.name: {"cls": Nanny, "options": {**worker_options(m), **on,
                                                  "dashboard_address": "127.0.0.1:0",
                                                  "silence_logs": logging.CRITICAL}}
               for m in members}
    scheduler = {"cls": Scheduler, "options": {**on, "dashboard_address": None}}
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.CRITICAL,
                       name="acltuner-farm", security=security)


def agree(board: Board, hellos: dict[str, dict]) -> dict:
    """The farm's hello, once every member is of `board`'s class and all run
    one engine; else FarmError naming the odd member."""
    if not hellos:
        raise FarmError("the farm has no member")
    for name, h in sorted(hellos.items()):
        if h["board_fingerprint"] != board.fingerprint:
            raise FarmError(f"farm member {name} ({h['where']}) is a {h['board']} "
                            f"({h['board_fingerprint']}), not of this tune's board class "
                            f"{board.name} ({board.fingerprint}): refusing to tune")
    engines = Counter(h["engine"] for h in hellos.values())
    common = engines.most_common(1)[0][0]
    for name, h in sorted(hellos.items()):
        if h["engine"] != common:
            raise FarmError(f"farm member {name} ({h['where']}) runs engine {h['engine']}, the "
                            f"others {common}: deploy one build to every board (acltuner "
                            f"deploy) before tuning")
    return next(iter(hellos.values()))["hello"]


@contextlib.contextmanager
def open_farm(board: Board, members: list[Member] | None, scheduler: str | None,
              realtime: bool = False, on_progress=None,
              security=None) -> Iterator[tuple[Farm, FarmLauncher]]:
    """members: start them here (embedded); scheduler: tcp:// or tls://HOST:PORT
    of a running cluster instead, whose workers are already up.  realtime: the
    launchers ask for real-time priority (tuner.yaml's measure.realtime).
    security: Dask's TLS (farm_security) for the scheduler, workers and client."""
    from distributed import Client
    with contextlib.ExitStack() as stack:
        admitted = None  # a standing farm's scheduler admits its workers
        if scheduler:
            try:
                client = stack.enter_context(Client(scheduler, timeout=30, security=security,
                                                    set_as_default=False))
            except OSError as e:
                raise FarmError(f"cannot reach the Dask scheduler {scheduler}: {e}") from None
        elif members is None:
            raise FarmError("a farm needs its members or the scheduler of a running one")
        else:
            # A wrapper not allowed is refused before any worker starts.
            for m in members:
                m.board.wrapper()
            cluster = stack.enter_context(embedded_cluster(members, security))
            client = stack.enter_context(Client(cluster, security=security,
                                                set_as_default=False))

            def admitted():  # the workers this farm started, at their current addresses
                return {n.worker_address for n in list(cluster.workers.values())}
        farm = Farm(client, board, on_progress, admitted=admitted)
        farm.wait_for(len(members) if members else 1, START_TIMEOUT_S)
        hello = agree(board, farm.say_hello(realtime))
        yield farm, FarmLauncher(farm, hello)

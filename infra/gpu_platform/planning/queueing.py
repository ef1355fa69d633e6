"""Inference from request data: the servers an M/M/c queue (Erlang C) needs for a target wait.

When a demand entry gives its requests (`requests: {arrivalRate, serviceTime, targetWait, percentile,
concurrency}`), the GPUs it needs are the fewest servers c for which the waiting time W of an M/M/c
queue (Poisson arrivals at rate lambda, exponential service of mean S = 1/mu, c servers, FIFO) meets
the target at the percentile:

    P(W > t) = C(c, a) * exp(-(c * mu - lambda) * t),   a = lambda * S (offered load, erlangs)

where C(c, a) is the Erlang C probability of waiting. A server is one request slot: a GPU serving
`concurrency` requests at once is that many servers, so GPUs = ceil(c / concurrency). Erlang C is
computed from the Erlang B recursion (B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)); C = c B / (c - a (1 - B))),
which stays finite for thousands of servers where the factorial form overflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_SERVERS = 1_000_000


@dataclass(frozen=True)
class Requests:
    """Request-level demand of one entry: what the Erlang C sizing needs."""

    arrival_rate: float
    """Requests per second (mean, at the busy hour the plan is for)."""
    service_time: float
    """Seconds one request holds one server (request slot), mean."""
    target_wait: float
    """Seconds a request may wait for a slot."""
    percentile: float = 0.95
    """Share of requests that must wait no longer than `target_wait`."""
    concurrency: int = 1
    """Requests one GPU (one unit of the entry) serves at once."""


def erlang_c(servers: int, load: float) -> float:
    """Probability an arriving request waits (Erlang C) with `servers` servers at `load` erlangs; 1 when unstable."""
    if servers <= load:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    return servers * b / (servers - load * (1 - b))


def wait_exceeds(servers: int, r: Requests) -> float:
    """P(W > target wait) of the M/M/c queue with `servers` servers."""
    load = r.arrival_rate * r.service_time
    if servers <= load:
        return 1.0
    mu = 1 / r.service_time
    return erlang_c(servers, load) * math.exp(-(servers * mu - r.arrival_rate) * r.target_wait)


def servers_for(r: Requests) -> int:
    """The fewest servers whose P(W > target wait) <= 1 - percentile (Erlang B carried from c to c + 1)."""
    load = r.arrival_rate * r.service_time
    mu = 1 / r.service_time
    b, c = 1.0, 0
    while True:
        c += 1
        b = load * b / (c + load * b)
        if c >= MAX_SERVERS:  # the caller refuses loads this large (declared.py); never loop unbounded
            return c
        if c <= load:
            continue
        waits = c * b / (c - load * (1 - b)) * math.exp(-(c * mu - r.arrival_rate) * r.target_wait)
        if waits <= 1 - r.percentile + 1e-12 or c >= MAX_SERVERS:
            return c


def gpus_for(r: Requests) -> int:
    """Units (GPUs, slices or shares) the entry needs: servers over the requests each serves at once."""
    return math.ceil(servers_for(r) / r.concurrency)

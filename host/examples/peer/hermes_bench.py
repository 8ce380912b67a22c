#!/usr/bin/env python3
"""The original's side of `host/examples/peer_bench.rs` (docs/performance.md,
"Side by side with the original").

Times the original Python implementation (NousResearch/hermes-agent, the
"application declarations" subsystem, line A) on the `plugin.yaml` the Rust
bench wrote: its declaration parser on the already-decoded mapping, then its
`availability()`, per declaration. Prints one JSON object on stdout.

This file is ours; the original is imported from a checkout named by
WASMGATE_PEER_HERMES (a folder holding `hermes_platform/`). Only
`hermes_platform.declaration` and `hermes_platform.resolver.availability` are
imported (they pull in `resolver.app`, `resolver.core`, `resolver.base`,
`resolver.known_dirs` and `host.facts`). On the declarations the bench writes
(no `requires.gpu`, no `liveness`, no version source) those modules only stat,
list and read files: the GPU class is never read, no process is spawned and
nothing is dialled. An audit hook counts any process or socket event anyway,
and the count is part of the output (expected 0).

Usage: hermes_bench.py PLUGIN_YAML RUNS
"""

import json
import os
import statistics
import sys
import time

# Process and network audit events (PEP 578); recorded, not refused, so the
# count shows up in the bench's output instead of a traceback.
_FORBIDDEN = ("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
              "os.fork", "os.forkpty", "socket.", "http.client.", "urllib.", "ctypes.dlopen")
_seen = []


def _audit(event, _args):
    if event.startswith(_FORBIDDEN):
        _seen.append(event)


sys.addaudithook(_audit)


def _timed(runs, f):
    """Median and minimum seconds of `runs` calls of `f`, and its last result."""
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), out


def main():
    plugin_yaml, runs = sys.argv[1], int(sys.argv[2])
    checkout = os.environ.get("WASMGATE_PEER_HERMES")
    if not checkout or not os.path.isdir(os.path.join(checkout, "hermes_platform")):
        sys.exit("WASMGATE_PEER_HERMES must name a checkout holding hermes_platform/")
    sys.path.insert(0, checkout)

    import yaml  # PyYAML, as the original's plugin loader uses
    from hermes_platform.declaration import DeclarationError, parse_declaration
    from hermes_platform.resolver.availability import availability

    with open(plugin_yaml, encoding="utf-8") as fh:
        text = fh.read()
    # Decoding is not part of the compared figure (the issue compares the
    # original's parse of the already-decoded dict); timed once, for context.
    t = time.perf_counter()
    doc = yaml.safe_load(text)
    decode_s = time.perf_counter() - t
    # The server name, and the `app` and `requires` values of its entry, as
    # the original's loader hands them to the parser.
    entries = [(name, e.get("app"), e.get("requires")) for name, e in doc["mcp_servers"].items()]
    n = len(entries)

    def parse_all():
        return [parse_declaration(name, app, req, where=f"plugin.yaml server '{name}'")
                for name, app, req in entries]

    def parse_and_evaluate():
        return [availability(parse_declaration(name, app, req, where=f"plugin.yaml server '{name}'"))
                for name, app, req in entries]

    try:
        decls = parse_all()
    except DeclarationError as e:
        sys.exit(f"the original refused a declaration: {e}")

    parse = _timed(runs, parse_all)
    evaluate = _timed(runs, lambda: [availability(d) for d in decls])
    both = _timed(runs, parse_and_evaluate)
    per = lambda s: s * 1e6 / n  # noqa: E731 — seconds per pass to µs per declaration
    json.dump({
        "python": sys.version.split()[0],
        "declarations": n,
        "runs": runs,
        "decode_us": per(decode_s),
        "parse_us": [per(parse[0]), per(parse[1])],
        "availability_us": [per(evaluate[0]), per(evaluate[1])],
        "parse_availability_us": [per(both[0]), per(both[1])],
        "forbidden_events": _seen,
        "outcomes": {d.name: [a.state, a.path] for d, a in zip(decls, both[2])},
    }, sys.stdout)


if __name__ == "__main__":
    main()

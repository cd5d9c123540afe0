#!/usr/bin/env python3
"""Instructions per call of a same-host lrpc call, on each side, counted by callgrind.

usage: bench/instructions.py LRPC_BENCH [CELL]     (CELL: Null/lrpc_spin unless given)

LRPC_BENCH should be built with line tables (-DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG -g": the
same code as the Release build): without them callgrind books code it has no symbol for to
the symbol before it, and a count lands on the wrong name.

This VM's performance counters cannot be opened (perf_event_open fails), so the cost
breakdown's instruction column is empty; callgrind counts the instructions each function
executes instead, exactly but slowly. The script runs one cell of lrpc_bench under
`valgrind --tool=callgrind --trace-children=yes` (its server process too) and prints, per
process, each function's own instructions divided by the calls the process served or made
(the calls of LocalCall::invoke in the client, Connection::runCall in the server), for the
functions of lrpc, the generated code and the benchmark's loop, and any other function called
on every call (memcpy). Some also count waiting:
LocalCall::invoke spins on the return doorbell and waitForCall on the call doorbell, a few
instructions per look, and a waiting server thread looks at its binding's other A-stacks
(Connection::help); they are marked, and left out of the totals. Timing under valgrind means
nothing; only the counts do.
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

# Functions that run while a side waits: the spins themselves, and a waiting server thread's
# looks at its binding's other A-stacks (Connection::help, through serve's lambda).
WAITING = ("lrpc::LocalCall::invoke()", "lrpc::detail::waitForCall(", "lrpc::Connection::help(",
           "lrpc::Connection::serve(lrpc::ServerSlot*, unsigned int)::{lambda")
PER_CALL = ("lrpc::LocalCall::invoke()", "lrpc::Connection::runCall(")


def parse(path):
    names, own, calls = {}, collections.Counter(), collections.Counter()
    fn = cfn = None
    pending = False
    for line in open(path):
        m = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            if kind == "fn":
                fn = names[ident]
            else:
                cfn = names[ident]
            continue
        m = re.match(r"^calls=(\d+)", line)
        if m:
            calls[cfn] += int(m.group(1))
            pending = True  # the next cost line is the call's inclusive cost, not fn's own
            continue
        # A cost line: a position (a line number, relative +n/-n, or * for the same) and the
        # count; "summary:" and "totals:" lines are the whole program's, not fn's.
        m = re.match(r"^(?:[+-]?\d+|\*|0x[0-9a-f]+) (\d+)$", line.rstrip("\n"))
        if m and fn:
            if pending:
                pending = False
            else:
                own[fn] += int(m.group(1))
    return own, calls


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    cell = sys.argv[2] if len(sys.argv) > 2 else "Null/lrpc_spin"
    out = tempfile.mkdtemp(prefix="lrpc-callgrind-")
    subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}/cg.%p",
                    binary, f"--benchmark_filter=^{cell}/real", "--benchmark_min_time=0.3",
                    "--benchmark_repetitions=1"], check=True, capture_output=True)
    for path in sorted(glob.glob(f"{out}/cg.*")):
        own, calls = parse(path)
        marker = next((n for n in calls if n.startswith(PER_CALL)), None)
        if marker is None:
            continue  # not a process that made or served the calls
        n = calls[marker]
        side = "client" if marker.startswith("lrpc::LocalCall") else "server"
        rows = sorted(((v / n, f) for f, v in own.items() if v / n >= 1.0 and ("lrpc" in f or calls[f] >= n)),
                      reverse=True)
        total = sum(v for v, f in rows if not f.startswith(WAITING))
        print(f"{side}: {n} calls of {cell}; each function's own instructions per call")
        for v, f in rows:
            mark = "  (includes waiting)" if f.startswith(WAITING) else ""
            print(f"  {v:7.1f}  {f[:100]}{mark}")
        print(f"  {total:7.1f}  total, waiting functions left out\n")


if __name__ == "__main__":
    main()

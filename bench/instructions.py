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
(the calls of Connection::runCall in the server, of the cell's generated stub in the client,
Client::null for Null/...), for the functions of lrpc, the generated code and the benchmark's
loop, and any other function called on every call (memcpy). Waiting is left out of the
totals: the return doorbell's inline spin (LocalCall::invoke's loop and the pause, booked by
source line, since the compiler may inline them anywhere), the server's wait for the call
doorbell (waitForCall), and a waiting server thread's looks at its binding's other A-stacks
(Connection::help). Timing under valgrind means nothing; only the counts do.
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

# Functions that run while a side waits: the server's spin, and a waiting server thread's looks
# at its binding's other A-stacks (Connection::help, through serve's lambda).
WAITING = ("lrpc::detail::waitForCall(", "lrpc::Connection::help(",
           "lrpc::Connection::serve(lrpc::ServerSlot*, unsigned int)::{lambda")
# The client's inline spin, by its source lines: wherever the compiler inlined them.
SPIN = "lrpc: the inline spin on the return doorbell"
WAITING += (SPIN,)
SERVER_MARK = "lrpc::Connection::runCall("


def client_mark(cell):
    """The generated client stub of the cell's call (Null -> Client::null), which the bench
    calls once per call."""
    call = cell.split("/")[0]
    return "::Client::" + call[0].lower() + call[1:] + "("


def spin_lines(root):
    """(file suffix, line) of the spin loops' own lines: inlined into a caller, they are still
    waiting, and callgrind books them to that caller."""
    marks = {"runtime/local_call.h": ("i < kInlineSpins", "returnWord.load(std::memory_order_acquire), seq)"),
             "runtime/plain_call.h": ("i < kInlineSpins", "returnWord.load(std::memory_order_acquire), seq)"),
             "runtime/transfer.h": ("__builtin_ia32_pause()",)}
    lines = set()
    for rel, needles in marks.items():
        for no, text in enumerate(open(os.path.join(root, rel)), start=1):
            if any(n in text for n in needles):
                lines.add((rel, no))
    return lines


def parse(path, spins):
    """Own instructions per function (spin lines booked to SPIN instead) and calls per callee."""
    names, files, own, calls = {}, {}, collections.Counter(), collections.Counter()
    fn = cfn = None
    src = None  # the file of the cost lines that follow (fl=, fi=, fe=)
    line = 0
    pending = False
    for raw in open(path):
        raw = raw.rstrip("\n")
        m = re.match(r"^(fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$", raw)
        if m:
            kind, ident, name = m.groups()
            if name:
                files[ident] = name
            if not kind.startswith("c"):  # cfi/cfl name the callee's file, not ours
                src = files[ident]
            continue
        m = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", raw)
        if m:
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            if kind == "fn":
                fn = names[ident]
            else:
                cfn = names[ident]
            continue
        m = re.match(r"^calls=(\d+)", raw)
        if m:
            calls[cfn] += int(m.group(1))
            pending = True  # the next cost line is the call's inclusive cost, not fn's own
            continue
        # A cost line: a line number (absolute, +n/-n relative, or * for the same) and the
        # count; "summary:" and "totals:" lines are the whole program's, not fn's.
        m = re.match(r"^([+-]?\d+|\*) (\d+)$", raw)
        if m and fn:
            pos, cost = m.groups()
            if pos[0] in "+-":
                line += int(pos)
            elif pos != "*":
                line = int(pos)
            if pending:
                pending = False
            elif src and any(src.endswith(f) and line == no for f, no in spins):
                own[SPIN] += int(cost)
            else:
                own[fn] += int(cost)
    return own, calls


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    cell = sys.argv[2] if len(sys.argv) > 2 else "Null/lrpc_spin"
    out = tempfile.mkdtemp(prefix="lrpc-callgrind-")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spins = spin_lines(root)
    subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}/cg.%p",
                    binary, f"--benchmark_filter=^{cell}/real", "--benchmark_min_time=0.3",
                    "--benchmark_repetitions=1"], check=True, capture_output=True)
    for path in sorted(glob.glob(f"{out}/cg.*")):
        own, calls = parse(path, spins)
        marker = next((n for n in calls if n.startswith(SERVER_MARK) or (client_mark(cell) in n and n.endswith(") const"))), None)
        if marker is None:
            continue  # not a process that made or served the calls
        n = calls[marker]
        side = "server" if marker.startswith(SERVER_MARK) else "client"
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

#!/usr/bin/env python3
"""Turns lrpc_bench's Google Benchmark JSON into the Table IV-style markdown of bench/README.md.

Usage: make_table.py RESULTS.json TABLE.md [--interleaved] [--idle IDLE.json]

Cells are the median real time per call over the repetitions, with [min-max]; ratios divide
medians. Columns whose benchmarks are absent from the JSON (a path not built yet, or filtered
out) are left out and listed under the tables; a benchmark that failed shows its error.
"""
import json
import re
import statistics
import sys

CALLS = ["Null", "Add", "BigIn", "BigInOut"]

SAME_HOST = ["direct", "inproc", "lrpc", "lrpc_spin", "lrpc_block", "lrpc_block_samecore",
             "floor_spin", "floor_futex", "floor_futex_samecore", "msg_uds", "msg_uds_samecore", "capnp_rpc", "grpc_uds"]
NETWORK = ["net_loopback", "net_veth", "net_veth_secure", "net_veth_block", "floor_udp_busy", "floor_udp"]

# The paper's Table IV in µs: (LRPC/MP, LRPC, Taos).
PAPER = {"Null": (125, 157, 464), "Add": (130, 164, 480), "BigIn": (173, 192, 539), "BigInOut": (219, 227, 636)}

# (numerator, denominator, what it says)
RATIOS = [
    ("lrpc_spin", "floor_spin", "lrpc spinning vs the shared-memory spin floor"),
    ("lrpc_block", "floor_futex", "lrpc blocking vs the futex floor"),
    ("lrpc_block_samecore", "floor_futex_samecore", "lrpc blocking vs the futex floor, both on one CPU"),
    ("lrpc", "floor_spin", "lrpc default (adaptive) vs the spin floor"),
    ("lrpc", "direct", "lrpc default vs an in-process call"),
    ("net_veth", "floor_udp_busy", "network path busy-polling vs the busy UDP floor"),
    ("net_veth_block", "floor_udp", "network path blocking vs the blocking UDP floor"),
    ("net_veth_secure", "net_veth", "network path secure (authenticated, encrypted) vs clear text (goal <= 1.10)"),
    None,  # above: lrpc against its floors; below: the peers against lrpc and the floors
    ("msg_uds", "lrpc", "message-passing RPC (\"Taos\") vs lrpc"),
    ("msg_uds_samecore", "lrpc_block_samecore", "both on one CPU: the paper's Taos / LRPC (about 3x)"),
    ("capnp_rpc", "lrpc", "Cap'n Proto RPC vs lrpc"),
    ("grpc_uds", "lrpc", "gRPC vs lrpc"),
    ("msg_uds", "floor_futex", "message-passing RPC vs the futex floor"),
    ("capnp_rpc", "floor_futex", "Cap'n Proto RPC vs the futex floor"),
    ("grpc_uds", "floor_futex", "gRPC vs the futex floor"),
]


# Paired cells (bench/paired.h): <Call>/paired_<a>_<b> alternates bursts of a and b in each
# repetition and reports the median per-round ratio a / b ("ratio") and the two times.
PAIRED = [
    ("paired_lrpc_floor_spin", "lrpc", "floor_spin"),
    ("paired_lrpc_spin_floor_spin", "lrpc_spin", "floor_spin"),
    ("paired_lrpc_block_floor_futex", "lrpc_block", "floor_futex"),
    ("paired_net_veth_block_floor_udp", "net_veth_block", "floor_udp"),
    ("paired_net_veth_floor_udp_busy", "net_veth", "floor_udp_busy"),
    ("paired_net_veth_secure_net_veth", "net_veth_secure", "net_veth"),
]

# Overhead over the spin floor in ns (bench/paired.h's diff_ns): (paired key, path), and the
# goal per call.
OVERHEAD = [("paired_lrpc_floor_spin", "lrpc"), ("paired_lrpc_spin_floor_spin", "lrpc_spin")]
OVERHEAD_GOAL = {"Null": 15, "Add": 15, "BigIn": 25, "BigInOut": 25}

# Cost/<piece> (bench/breakdown.h): pieces of a same-host call timed alone in one thread.
COST_PIECES = [("astack", "take and return an A-stack (a LocalCall made and dropped): the thread's cached one"),
               ("astackPool", "the same from the shared pool, for a thread whose cached one is in use"),
               ("astackPlain", "the thread's cached one as a call with no tail and no capability takes it "
                "(a PlainCall made and dropped)"),
               ("pause", "one PAUSE: the step in which lrpc and the spin floor poll their doorbells, so the "
                "step by which a call's own work moves its round trip"),
               ("result", "a Result<int32_t> built ok, checked and read"),
               ("capDispatch/Null", "the server side of Null on a capability: table lookup, inner frame, inner dispatch, "
                "the tunnel's results (against dispatch/Null)"),
               ("capExport", "a caller passing one of its own objects: the export table's add, then the release "
                "its return brings (a callback pays it once a call)")]

# A struct against flat parameters (bench/struct_args.h): StructArgs/<path> and FlatArgs/<path>
# pass the same values as one struct or as three parameters, StructArgs/<key> alternates them
# (a_ns: struct, b_ns: flat). (path, paired key)
FORMS = [("lrpc", "paired_lrpc_flat"), ("net_veth", "paired_net_veth_flat")]
# StructView/<path> passes the struct as views ($Lrpc.views); StructView/paired_<path>_flat
# alternates it with FlatArgs (a_ns: view, b_ns: flat).

# Calls on capabilities (bench/caps.h): CapNull/<path> on an object the server returned,
# RootNull/<path> on the imported binding, CapNull/<key> alternates them (a_ns: cap, b_ns: root),
# CapMake/<path> returns a new object that the client then drops, Callback/<path> passes an
# object the client serves, which the server calls once (Callback/<key>: against RootNull).
# (path, paired key)
CAPS = [("lrpc", "paired_lrpc_root"), ("net_veth", "paired_net_veth_root"),
        ("net_veth_secure", "paired_net_veth_secure_root")]


# Tail/<path> (bench/tail.h): single Null calls timed one by one, same host then network.
TAIL = ["floor_spin", "lrpc", "lrpc_spin", "floor_udp_busy", "net_veth", "net_veth_secure"]


# Null/<path>_async (bench/async.h): one client thread keeping calls in flight, against the
# synchronous Null of the same path and, over the network, the pipelined raw-UDP floor.
# (async path, synchronous path, goal for async / sync or None, calls in flight)
ASYNC = [("lrpc_spin_async", "lrpc_spin", 0.5, "every A-stack of Null (5)"),
         ("lrpc_async", "lrpc", None, "every A-stack of Null (5)"),
         ("net_veth_async", "net_veth", 0.25, "the window (32)")]
PIPELINED_FLOOR = "floor_udp_pipelined"


# FirstCall/<path> (bench/lrpc_paths.cc): a new client's connect and first call.
FIRST_CALL = ["net_veth", "net_veth_secure"]

# Idle/<path> (bench/idle.h): (path, how its server waits).
IDLE = [
    ("lrpc", "same host, adaptive (the default)"),
    ("lrpc_spin", "same host, spin"),
    ("lrpc_block", "same host, block"),
    ("net_loopback", "network (loopback), adaptive (the default)"),
    ("net_veth", "network (veth), busy-poll"),
    ("net_veth_block", "network (veth), blocking"),
]


def fmt(ns):
    if ns is None:
        return "-"
    if ns >= 100:
        return f"{ns:,.0f}"
    if ns >= 10:
        return f"{ns:.1f}"
    return f"{ns:.2f}"


def load(path):
    with open(path) as f:
        doc = json.load(f)
    runs = {}    # (call, path) -> list of per-repetition dicts
    errors = {}  # (call, path) -> message
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("run_name", b["name"]).replace("/real_time", "").replace("/manual_time", "")
        name = re.sub(r"/iterations:\d+", "", name)
        parts = name.split("/", 1)
        if len(parts) != 2:
            continue
        key = (parts[0], parts[1])
        if b.get("error_occurred"):
            errors[key] = b.get("error_message", "error")
            continue
        runs.setdefault(key, []).append(b)
    return doc.get("context", {}), runs, errors


def summary(values):
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def fmt_pct(v):
    return f"{v:.{0 if v >= 10 else 1 if v >= 1 else 3}f}%"


def idle_section(path):
    """The Idle/<path> runs: the servers' CPU after the last call and the memory of a binding."""
    _, runs, errors = load(path)
    rows = [(p, how) for (p, how) in IDLE if ("Idle", p) in runs or ("Idle", p) in errors]
    if not rows:
        return []
    reps = max(len(runs.get(("Idle", p), [])) for p, _ in rows)
    calls = summary([r["calls_each"] for p, _ in rows for r in runs.get(("Idle", p), []) if "calls_each" in r])

    def cell(p, name, show):
        if ("Idle", p) not in runs:
            return "error: " + errors[("Idle", p)].replace("|", "/")
        s = summary([r[name] for r in runs[("Idle", p)] if name in r])
        if s is None:
            return "-"
        med, lo, hi = s
        return show(med) if reps == 1 or lo == hi else f"{show(med)} [{show(lo)}-{show(hi)}]"

    out = ["## Idle servers and memory per binding\n",
           f"Each of {reps} repetition(s) starts a fresh server (CPU 1), makes {calls[0] if calls else 0:,.0f} "
           "calls of each kind, "
           "then reads the CPU clocks over the first and the second second after the last call "
           "(bench/idle.h); cells: median [min-max]. The same-host target: under 1% of a core one "
           "second after the last call. A busy-polling network server spins by design.\n",
           "| path | server waits | server CPU, 1st second | server CPU, 2nd second | client process CPU, 2nd second "
           "| server threads | memory per binding |",
           "|---|---|---|---|---|---|---|"]
    for p, how in rows:
        mem = cell(p, "binding_bytes", lambda v: f"{v:,.0f} B")
        if mem != "-":
            mem += " (" + cell(p, "astacks", lambda v: f"{v:.0f}") + " A-stacks, one memfd)"
        out.append(f"| {p} | {how} | {cell(p, 'server_first_pct', fmt_pct)} | {cell(p, 'server_idle_pct', fmt_pct)} "
                   f"| {cell(p, 'client_idle_pct', fmt_pct)} | {cell(p, 'server_threads', lambda v: f'{v:.0f}')} "
                   f"| {mem} |")
    out.append("")
    return out


def main():
    # --interleaved: run.sh ran the repetitions in random order (Google Benchmark's JSON lists
    # them grouped by benchmark either way, so the table cannot tell by itself).
    interleaved = "--interleaved" in sys.argv[3:]
    idle = sys.argv[sys.argv.index("--idle") + 1] if "--idle" in sys.argv[3:-1] else None
    src, dst = sys.argv[1], sys.argv[2]
    ctx, runs, errors = load(src)
    paths = {p for (c, p) in list(runs) + list(errors) if c in CALLS}  # the table's columns

    def times(call, path):
        return summary([r["real_time"] for r in runs.get((call, path), [])])

    def counter(call, path, name):
        return summary([r[name] for r in runs.get((call, path), []) if name in r])

    def cell(call, path):
        if (call, path) in errors and (call, path) not in runs:
            return "error: " + errors[(call, path)].replace("|", "/")
        t = times(call, path)
        if t is None:
            return "-"
        med, lo, hi = t
        if len(runs[(call, path)]) == 1:
            return fmt(med)
        return f"{fmt(med)} [{fmt(lo)}-{fmt(hi)}]"

    reps = max((len(v) for v in runs.values()), default=0)
    out = []
    out.append("# lrpc_bench: the paper's Table IV on this machine\n")
    order = ", the repetitions of all cells run in random order" if interleaved else ""
    cells_are = (f"median of {reps} repetitions [min-max]{order}" if reps > 1
                 else "one repetition (a --quick run)")
    load_avg = ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    out.append(f"Run {ctx.get('date', '?')} on {ctx.get('host_name', '?')}: "
               f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz, "
               f"load average {load_avg} at the start. "
               f"Client on CPU 0, server process on CPU 1 (samecore: both on CPU 0). "
               f"Cells: real time per call in ns, {cells_are}. "
               f"Null = no args; Add = two int32 in, one out; BigIn = 200 B in; "
               f"BigInOut = 200 B in and 200 B out.\n")

    for title, group in (("Same host", SAME_HOST), ("Network (UDP)", NETWORK)):
        cols = [p for p in group if p in paths]
        if not cols:
            continue
        out.append(f"## {title}, ns per call\n")
        out.append("| call | " + " | ".join(cols) + " |")
        out.append("|---|" + "---|" * len(cols))
        for call in CALLS:
            out.append(f"| {call} | " + " | ".join(cell(call, p) for p in cols) + " |")
        out.append("")

    split = RATIOS.index(None)
    groups = (("lrpc against its floors", RATIOS[:split]),
              ("the peers against lrpc and the floors", RATIOS[split + 1:]))
    for title, group in groups:
        ratio_cols = [(a, b, why) for (a, b, why) in group if a in paths and b in paths]
        if not ratio_cols:
            continue
        out.append(f"## Ratios of medians, {title} (how many times slower the first path is)\n")
        out.append("| call | " + " | ".join(f"{a} / {b}" for a, b, _ in ratio_cols) + " |")
        out.append("|---|" + "---|" * len(ratio_cols))
        for call in CALLS:
            cells = []
            for a, b, _ in ratio_cols:
                ta, tb = times(call, a), times(call, b)
                cells.append(f"{ta[0] / tb[0]:.2f}x" if ta and tb and tb[0] > 0 else "-")
            out.append(f"| {call} | " + " | ".join(cells) + " |")
        out.append("")
        for a, b, why in ratio_cols:
            out.append(f"- {a} / {b}: {why}")
        out.append("")

    def paired_cell(call, key):
        if (call, key) in errors and (call, key) not in runs:
            return "error: " + errors[(call, key)].replace("|", "/")
        r, ta, tb = counter(call, key, "ratio"), counter(call, key, "a_ns"), counter(call, key, "b_ns")
        if not r:
            return "-"
        return f"{r[0]:.2f}x [{r[1]:.2f}-{r[2]:.2f}] ({fmt(ta[0])} / {fmt(tb[0])})"

    paired_cols = [(key, a, b) for (key, a, b) in PAIRED if key in paths]
    if paired_cols:
        out.append("## Paired ratios: the two paths in alternating bursts (how many times slower the first is)\n")
        out.append("Each repetition alternates bursts of 256 calls on the two paths (their servers both on "
                   "CPU 1, each asleep while the other runs, or stopped with SIGSTOP where it busy-polls) and "
                   "takes the median of the per-round ratios; "
                   "cells: the median over the repetitions [min-max], then the two paths' ns per call "
                   "(medians). Unlike the ratios above, both sides of each ratio see the same host at the "
                   "same moment (bench/README.md, \"Paired ratios\").\n")
        out.append("| call | " + " | ".join(f"{a} / {b}" for _, a, b in paired_cols) + " |")
        out.append("|---|" + "---|" * len(paired_cols))
        for call in CALLS:
            out.append(f"| {call} | " + " | ".join(paired_cell(call, key) for key, _, _ in paired_cols) + " |")
        out.append("")

    overhead_cols = [(key, p) for (key, p) in OVERHEAD if key in paths]
    if overhead_cols:
        def diff_cell(call, key):
            if (call, key) in errors and (call, key) not in runs:
                return "error: " + errors[(call, key)].replace("|", "/")
            d = counter(call, key, "diff_ns")
            if not d:
                return "-"
            return f"{d[0]:+,.0f} [{d[1]:+,.0f} to {d[2]:+,.0f}]"

        floors = [counter("Null", key, "b_ns") for key, _ in overhead_cols]
        floors = [f[0] for f in floors if f]
        out.append("## Overhead over the spin floor, ns per call (paired)\n")
        out.append("What a call costs beyond moving its cache lines: the per-round difference (path minus "
                   "floor_spin) in the paired cells, median over the repetitions [min to max]. The floor's own "
                   "Null took " + (f"{min(floors):,.0f}-{max(floors):,.0f} ns" if floors else "-") +
                   " in these cells: about 60-100 ns is a fast placement of the two vCPUs, 250-450 ns a slow "
                   "one (bench/README.md, \"Overhead in ns\"). Goal: at most 15 ns for Null and Add, 25 ns for "
                   "BigIn and BigInOut.\n")
        out.append("| call | " + " | ".join(f"{p} - floor_spin" for _, p in overhead_cols) + " | floor_spin | goal |")
        out.append("|---|" + "---|" * (len(overhead_cols) + 2))
        for call in CALLS:
            fl = counter(call, overhead_cols[0][0], "b_ns")
            out.append(f"| {call} | " + " | ".join(diff_cell(call, key) for key, _ in overhead_cols) +
                       f" | {fmt(fl[0]) if fl else '-'} | {OVERHEAD_GOAL[call]} |")
        out.append("")

    cost_rows = [(f"Cost/{piece}", why, ("Cost", piece)) for piece, why in COST_PIECES]
    cost_rows += [(f"Cost/dispatch/{c}", "the generated server dispatch: copy out and check, handler, results",
                   ("Cost", f"dispatch/{c}")) for c in CALLS]
    cost_rows += [(f"{c}/inproc", "the whole generated client and server code, one thread, message buffer",
                   (c, "inproc")) for c in CALLS]
    cost_rows += [(f"{c}/direct", "the handler's virtual call alone", (c, "direct")) for c in CALLS]
    cost_rows = [r for r in cost_rows if r[2] in runs or r[2] in errors]
    if any(k[0] == "Cost" for _, _, k in cost_rows):
        has_instr = any("instructions" in r for _, _, k in cost_rows for r in runs.get(k, []))
        out.append("## Cost breakdown: the pieces of a call, one thread, no handoff, ns\n")
        out.append("Each piece timed alone in the client's thread (bench/breakdown.h), so that none pays a "
                   "cache-line handoff: set beside the overhead above, they show where a call's own time goes. "
                   "The client stub's copy-in and copy-out are inside `inproc`. " +
                   ("Instructions: user-space instructions per piece (perf_event_open)." if has_instr else
                    "Instructions per piece: not available, this machine's performance counters cannot be "
                    "opened (perf_event_open fails; `perf stat -e instructions` reports <not supported>).") + "\n")
        out.append("| piece | what it is | ns | instructions |")
        out.append("|---|---|---|---|")
        for name, why, k in cost_rows:
            if k not in runs:
                out.append(f"| {name} | {why} | error: {errors[k]} | - |")
                continue
            t = summary([r["real_time"] for r in runs[k]])
            ins = summary([r["instructions"] for r in runs[k] if "instructions" in r])
            out.append(f"| {name} | {why} | {fmt(t[0])} [{fmt(t[1])}-{fmt(t[2])}] | {f'{ins[0]:,.0f}' if ins else '-'} |")
        out.append("")

    first = [p for p in FIRST_CALL if ("FirstCall", p) in runs or ("FirstCall", p) in errors]
    if first:
        out.append("## Time to first call, µs\n")
        out.append("A new client on a running server (bench/lrpc_paths.cc, FirstCall/<path>): opening its endpoint, "
                   "the handshakes (on the secure path the Noise_IKpsk2 one, then the session's) and one Null "
                   "call; 200 in a row per repetition. Cells: median [min-max] over the repetitions.\n")
        out.append("| path | first call |")
        out.append("|---|---|")
        for p in first:
            if ("FirstCall", p) not in runs:
                out.append(f"| {p} | error: {errors[('FirstCall', p)]} |")
                continue
            med, lo, hi = times("FirstCall", p)
            out.append(f"| {p} | {med / 1000:.0f} [{lo / 1000:.0f}-{hi / 1000:.0f}] |")
        out.append("")

    forms = [(p, key) for (p, key) in FORMS
             if any((c, k) in runs or (c, k) in errors for c, k in (("StructArgs", p), ("FlatArgs", p), ("StructArgs", key)))]
    if forms:
        out.append("## A struct argument and result against the same values as flat parameters, ns per call\n")
        out.append("StructArgs calls `structEcho(r :Rec) -> (r :Rec)`, FlatArgs `flatEcho(name :Text, note :Text, "
                   "nums :List(Int32))` with the same three results; the values are two Text of 16 and 24 bytes and "
                   "8 Int32 (bench/struct_args.capnp). The paired cell alternates bursts of the two forms on one "
                   "session, as the paired ratios do: struct / flat [min-max] (struct ns / flat ns). StructView "
                   "calls `viewEcho(r :Rec) -> (r :Rec) $Lrpc.views`: the client passes `Rec::View` (views of its "
                   "own bytes) and the handler reads the argument in place (idl/README.md, \"Views\"); its paired "
                   "cell is view / flat.\n")
        out.append("| path | StructArgs | FlatArgs | struct / flat (medians) | paired struct / flat "
                   "| StructView | paired view / flat |")
        out.append("|---|---|---|---|---|---|---|")
        for p, key in forms:
            ts, tf = times("StructArgs", p), times("FlatArgs", p)
            ratio = f"{ts[0] / tf[0]:.2f}x" if ts and tf and tf[0] > 0 else "-"
            out.append(f"| {p} | {cell('StructArgs', p)} | {cell('FlatArgs', p)} | {ratio} "
                       f"| {paired_cell('StructArgs', key)} | {cell('StructView', p)} "
                       f"| {paired_cell('StructView', key)} |")
        out.append("")

    caps = [(p, key) for (p, key) in CAPS
            if any((c, k) in runs or (c, k) in errors for c, k in (("CapNull", p), ("RootNull", p), ("CapNull", key)))]
    if caps:
        out.append("## Calls on capabilities, ns per call\n")
        out.append("CapNull calls `null()` on an object the server returned (`obj() -> (obj :Obj)`; its calls go "
                   "through the binding's tunnel procedure, runtime/capability.h), RootNull the same empty call on "
                   "the imported binding; the paired cell alternates bursts of the two on one session: cap / root "
                   "[min-max] (cap ns / root ns). CapMake is a call that returns a new object, plus the release "
                   "the client sends when it drops it. Callback passes an object the client serves; the server "
                   "calls it once (a call in the reverse direction) and drops it before it returns, its release "
                   "riding on the call's return on the same host and on its reply over UDP; its paired cell "
                   "is callback / root (bench/caps.capnp; over UDP the callback takes the session the server opened "
                   "back to the client, and the waiting caller, which polls, runs it).\n")
        out.append("| path | CapNull | RootNull | paired cap / root | CapMake (make + release) | Callback | paired callback / root |")
        out.append("|---|---|---|---|---|---|---|")
        for p, key in caps:
            out.append(f"| {p} | {cell('CapNull', p)} | {cell('RootNull', p)} | {paired_cell('CapNull', key)} "
                       f"| {cell('CapMake', p)} | {cell('Callback', p)} | {paired_cell('Callback', key)} |")
        out.append("")

    asyncs = [a for a in ASYNC if ("Null", a[0]) in runs or ("Null", a[0]) in errors]
    if asyncs:
        out.append("## Asynchronous calls: Null with many in flight from one thread, ns per call\n")
        out.append("One client thread keeps the calls in flight; each iteration completes the oldest, and "
                   "calls restart in its place: at once on the same host, in bursts of 8 under an "
                   "lrpc::SendBatch on the network, whose requests then leave in one system call "
                   "(bench/async.h). Cells: real time per call, median [min-max]; the "
                   "ratio is of medians against the same path's synchronous Null in this run. "
                   f"{PIPELINED_FLOOR}: raw UDP between the namespaces, 32 Null datagrams in flight from "
                   "one thread, recvmmsg/sendmmsg on both sides, the server busy-polling.\n")
        out.append("| path | in flight | ns per call | calls/s | synchronous Null | async / sync (goal) "
                   f"| against {PIPELINED_FLOOR} (goal) | CPU per call: client / server |")
        out.append("|---|---|---|---|---|---|---|---|")
        floor = times("Null", PIPELINED_FLOOR)
        for a, sync, goal, depth in asyncs:
            ta, ts = times("Null", a), times("Null", sync)
            ratio = f"{ta[0] / ts[0]:.2f}x" if ta and ts and ts[0] > 0 else "-"
            if goal is not None:
                ratio += f" (<= {goal:.2f}x)"
            vs_floor = "-"
            if a.startswith("net_") and ta and floor:
                vs_floor = f"{ta[0] / floor[0]:.2f}x (<= 1.25x)"
            rate = f"{1e9 / ta[0]:,.0f}" if ta and ta[0] > 0 else "-"
            c = counter("Null", a, "client_cpu_ns")
            sv = counter("Null", a, "server_cpu_ns")
            cpu = f"{fmt(c[0]) if c else '-'} / {fmt(sv[0]) if sv else '-'}"
            out.append(f"| {a} | {depth} | {cell('Null', a)} | {rate} | {cell('Null', sync)} | {ratio} | {vs_floor} | {cpu} |")
        if floor:
            c = counter("Null", PIPELINED_FLOOR, "client_cpu_ns")
            sv = counter("Null", PIPELINED_FLOOR, "server_cpu_ns")
            out.append(f"| {PIPELINED_FLOOR} | 32 | {cell('Null', PIPELINED_FLOOR)} | {1e9 / floor[0]:,.0f} | "
                       f"{cell('Null', 'floor_udp_busy')} (floor_udp_busy) | - | 1.00x | "
                       f"{fmt(c[0]) if c else '-'} / {fmt(sv[0]) if sv else '-'} |")
        out.append("")

    tails = [p for p in TAIL if ("Tail", p) in runs or ("Tail", p) in errors]
    if tails:
        out.append("## Tail latency of single Null calls, ns\n")
        out.append("Each repetition times 100,000 Null calls one by one (each sample includes one clock "
                   "reading); cells are the median over the repetitions of each percentile [min-max] "
                   "(bench/tail.h).\n")
        out.append("| path | p50 | p99 | p99.9 | max |")
        out.append("|---|---|---|---|---|")
        for p in tails:
            if ("Tail", p) not in runs:
                out.append(f"| {p} | error: {errors[('Tail', p)].replace('|', '/')} | | | |")
                continue
            cells = []
            for name in ("p50_ns", "p99_ns", "p999_ns", "max_ns"):
                c = counter("Tail", p, name)
                cells.append("-" if not c else (fmt(c[0]) if c[1] == c[2] else f"{fmt(c[0])} [{fmt(c[1])}-{fmt(c[2])}]"))
            out.append(f"| {p} | " + " | ".join(cells) + " |")
        out.append("")

    paired_keys = {key for key, _, _ in PAIRED}
    cpu_paths = [p for p in SAME_HOST + NETWORK + sorted(paths - set(SAME_HOST + NETWORK) - paired_keys) if p in paths]
    if cpu_paths:
        out.append("## CPU time per call, ns: client / server (medians)\n")
        out.append("The client's is the whole benchmark process (library threads included); the "
                   "server's is the server process's CPU clock. A spinning side burns CPU for the "
                   "whole round trip.\n")
        out.append("| path | " + " | ".join(CALLS) + " |")
        out.append("|---|" + "---|" * len(CALLS))
        for p in cpu_paths:
            cells = []
            for call in CALLS:
                c = counter(call, p, "client_cpu_ns")
                s = counter(call, p, "server_cpu_ns")
                cells.append(f"{fmt(c[0]) if c else '-'} / {fmt(s[0]) if s else '-'}")
            out.append(f"| {p} | " + " | ".join(cells) + " |")
        out.append("")

    if idle:
        out.extend(idle_section(idle))

    out.append("## For reference: the paper's Table IV (C-VAX Firefly, 1990), µs\n")
    out.append("| call | LRPC/MP | LRPC | Taos | Taos / LRPC |")
    out.append("|---|---|---|---|---|")
    for call, (mp, lrpc, taos) in PAPER.items():
        out.append(f"| {call} | {mp} | {lrpc} | {taos} | {taos / lrpc:.2f}x |")
    out.append("\nLRPC/MP corresponds to lrpc_spin here, LRPC (one processor) to lrpc_block_samecore, "
               "Taos to msg_uds_samecore (msg_uds is the same across two CPUs).\n")

    missing = [p for p in SAME_HOST + NETWORK + [key for key, _, _ in PAIRED] if p not in paths]
    if missing:
        out.append("Not in this run (not built yet or filtered out): " + ", ".join(missing) + ".\n")

    with open(dst, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()

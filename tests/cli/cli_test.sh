#!/usr/bin/env bash
# End-to-end test of the operator tool against cli_test_server (a real exporter in another
# process, serving the paper service on this host and on UDP, with 3 calls made to itself).
# Usage: cli_test.sh <lrpc> <cli_test_server>. Exits non-zero at the first failed check.
set -uo pipefail
LRPC=$1
SERVER=$2
work=$(mktemp -d)
export LRPC_DIR=$work/names
unset LRPC_LOG
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# expect <description> <regex> <file>: the file's text matches the regex.
expect() { grep -Eq -- "$2" "$3" || { echo "--- $3:" >&2; cat "$3" >&2; fail "$1"; }; }

# The secure port takes only this client's key.
"$LRPC" keygen "$work/client" >/dev/null 2>&1 || fail "keygen exited non-zero"
start_server() {
  "$SERVER" "$1" 3 "$work/client.pub" >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q '^ready' "$work/server.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.err" >&2; fail "server did not start"; }
    sleep 0.1
  done
  grep -q '^ready' "$work/server.out" || fail "server not ready after 10 s"
  port=$(awk '/^ready/ {print $2}' "$work/server.out")
  secure_port=$(awk '/^ready/ {print $3}' "$work/server.out")
  server_key=$(awk '/^ready/ {print $4}' "$work/server.out")
}

start_server paper
echo "server pid $server_pid, udp port $port"

# ls: the name, its interface, the server's pid and process name.
"$LRPC" ls >"$work/ls.out" 2>&1 || fail "ls exited non-zero"
expect "ls shows the names directory" "^# $LRPC_DIR\$" "$work/ls.out"
expect "ls shows paper with its interface, pid and process" \
  "^paper +paper\.capnp:Paper +$server_pid +cli_test_server +1\$" "$work/ls.out"

# stat: exact counters (one binding, three calls, no errors).
"$LRPC" stat paper >"$work/stat.out" 2>&1 || fail "stat exited non-zero"
expect "stat names the interface" '^interface: +paper\.capnp:Paper \(id 0x[0-9a-f]{16}, signature 0x[0-9a-f]{16}, 4 procedures\)' "$work/stat.out"
expect "stat names the server" "^server: +pid $server_pid \\(cli_test_server\\)" "$work/stat.out"
expect "stat counts the name's binding" '^bound to it: +1 clients$' "$work/stat.out"
expect "stat counts the binding" '^bindings: +1 live, 1 accepted, 0 rejected$' "$work/stat.out"
expect "stat counts the A-stack in use" '^A-stacks in use: +1 ' "$work/stat.out"
expect "stat counts the calls" '^calls served: +3$' "$work/stat.out"
expect "stat counts no errors" '^call errors: +0$' "$work/stat.out"

# ping, same host, in each transfer mode.
for mode in adaptive spin block; do
  "$LRPC" ping -c 20 -i 0 --mode "$mode" paper >"$work/ping.out" 2>&1 || { cat "$work/ping.out" >&2; fail "ping ($mode) exited non-zero"; }
  expect "ping ($mode) header" "^PING paper: paper\.capnp:Paper, pid $server_pid \\(cli_test_server\\), $mode mode" "$work/ping.out"
  expect "ping ($mode) per-call lines" '^seq=20 time=[0-9.]+ (ns|us|ms)$' "$work/ping.out"
  expect "ping ($mode) summary" '^20 sent, 20 answered, 0 errors$' "$work/ping.out"
  expect "ping ($mode) percentiles" '^rtt min/avg/max = .*, p50 .*, p90 .*, p99 ' "$work/ping.out"
done
# Pings are not the user's calls: the counters did not move.
"$LRPC" stat paper >"$work/stat2.out" 2>&1 || fail "stat after ping exited non-zero"
expect "ping leaves calls served alone" '^calls served: +3$' "$work/stat2.out"
expect "queries are not bindings" '^bindings: +1 live, 1 accepted, 0 rejected$' "$work/stat2.out"

# ping over UDP, to the same server's network export.
"$LRPC" ping -c 5 -i 0 -q "udp+clear://127.0.0.1:$port/paper" >"$work/udp.out" 2>&1 || { cat "$work/udp.out" >&2; fail "udp ping exited non-zero"; }
expect "udp ping names the interface" "^PING 127\\.0\\.0\\.1:$port: \"paper\" serves paper\\.capnp:Paper" "$work/udp.out"
expect "udp ping summary" '^5 sent, 5 answered, 0 errors$' "$work/udp.out"
expect "udp ping percentiles" '^rtt min/avg/max = ' "$work/udp.out"

# ls --all: every user's default directory. Another user's server refuses our query, but ls
# still says who serves the name. (Needs a second uid: CI runs as root, as the namespace tests do.)
if [ "$(id -u)" -ne 0 ]; then
  fail "ls --all check needs root (to run a server as another user)"
fi
other="cli-all-$$"
env -u XDG_RUNTIME_DIR -u LRPC_DIR setpriv --reuid=65534 --regid=65534 --clear-groups \
  "$SERVER" "$other" 0 >"$work/nobody.out" 2>&1 &
nobody_pid=$!
for _ in $(seq 100); do grep -q '^ready' "$work/nobody.out" 2>/dev/null && break; sleep 0.1; done
"$LRPC" ls --all >"$work/ls_all.out" 2>&1 || fail "ls --all exited non-zero"
kill "$nobody_pid"; wait "$nobody_pid"
expect "ls --all shows our directory" "^# $LRPC_DIR\$" "$work/ls_all.out"
expect "ls --all shows the other user's directory" '^# /tmp/lrpc-65534$' "$work/ls_all.out"
expect "ls --all names the other user's server" \
  "^$other +- +$nobody_pid +cli_test_server +\\(permission denied: uid 0 may not import \"$other\"\\)" "$work/ls_all.out"

# Wrong names: a clear error and exit status 1.
"$LRPC" ping nosuch >"$work/err.out" 2>&1 && fail "ping of a wrong name succeeded"
expect "ping of a wrong name says so" '^lrpc ping: not found: no server exports "nosuch"' "$work/err.out"
"$LRPC" stat nosuch >"$work/err.out" 2>&1 && fail "stat of a wrong name succeeded"
expect "stat of a wrong name says so" '^lrpc stat: not found: no server exports "nosuch"' "$work/err.out"
"$LRPC" ping -c 2 -i 0 "udp+clear://127.0.0.1:$port/nosuch" >"$work/err.out" 2>&1 && fail "udp ping of a wrong name succeeded"
expect "udp ping of a wrong name says so" "^lrpc ping: not found: .*nosuch" "$work/err.out"

# A secure server: the handshake checks its key, then the probes go sealed.
secure_uri="udp://127.0.0.1:$secure_port/paper?key=$server_key"
"$LRPC" ping -c 3 -i 0 --key "$work/client.key" "$secure_uri" >"$work/secure.out" 2>&1 || { cat "$work/secure.out" >&2; fail "secure udp ping exited non-zero"; }
expect "secure udp ping names the interface and the handshake" "^PING 127\\.0\\.0\\.1:$secure_port: \"paper\" serves paper\\.capnp:Paper \\(secure: server key verified, handshake " "$work/secure.out"
expect "secure udp ping summary" '^3 sent, 3 answered, 0 errors$' "$work/secure.out"
"$LRPC" ping -c 1 -i 0 --key "$work/client.key" "udp://127.0.0.1:$secure_port/nosuch?key=$server_key" >"$work/err.out" 2>&1 && fail "secure udp ping of a wrong name succeeded"
expect "secure udp ping of a wrong name says so" "^lrpc ping: not found: .*nosuch" "$work/err.out"
# A client key the server does not list (a fresh one), and a wrong pinned key: no answer.
"$LRPC" ping -c 1 -W 0.5 "$secure_uri" >"$work/err.out" 2>&1 && fail "secure udp ping with an unlisted client key succeeded"
expect "an unlisted client key gets no handshake" 'no answer to the secure handshake from 127\.0\.0\.1' "$work/err.out"
wrong_key=$(awk '{print $2}' "$work/client.pub")  # the client's own key: not the server's
"$LRPC" ping -c 1 -W 0.5 --key "$work/client.key" "udp://127.0.0.1:$secure_port/paper?key=$wrong_key" >"$work/err.out" 2>&1 && fail "secure udp ping with a wrong pinned key succeeded"
expect "a wrong pinned key gets no handshake" 'no answer to the secure handshake' "$work/err.out"
# The clear-text probe gets nothing from a secure-only port, and key files need a pinned key.
"$LRPC" ping -c 1 -W 0.3 "udp+clear://127.0.0.1:$secure_port/paper" >"$work/err.out" 2>&1 && fail "clear ping of a secure port succeeded"
expect "clear ping of a secure port gets no answer" 'no answer from 127\.0\.0\.1' "$work/err.out"
"$LRPC" ping -c 1 --key "$work/client.key" "udp+clear://127.0.0.1:$port/paper" >"$work/err.out" 2>&1 && fail "--key without a pinned key succeeded"
expect "--key without a pinned key says so" 'pin its key in the address' "$work/err.out"
"$LRPC" ping 'bad/name' >"$work/err.out" 2>&1 && fail "ping of an invalid name succeeded"
expect "ping of an invalid name says so" '^lrpc ping: invalid argument: bad character in name' "$work/err.out"
"$LRPC" frobnicate >"$work/err.out" 2>&1; [ $? -eq 2 ] || fail "unknown command is not a usage error"

# Logging is silent by default: nothing of the above reached the server's stderr.
[ -s "$work/server.err" ] && { cat "$work/server.err" >&2; fail "the server logged without LRPC_LOG"; }
# LRPC_LOG switches topics on: a second server, logging binding and transport events.
LRPC_LOG=binding,transport "$SERVER" logged 1 >"$work/logged.out" 2>"$work/logged.err" &
logged_pid=$!
for _ in $(seq 100); do grep -q '^ready' "$work/logged.out" 2>/dev/null && break; sleep 0.1; done
kill "$logged_pid"; wait "$logged_pid"
expect "LRPC_LOG=binding logs the export" '^lrpc\[binding\] exporting paper\.capnp:Paper as "logged"' "$work/logged.err"
expect "LRPC_LOG=binding logs the binding" '^lrpc\[binding\] "logged": bound a client' "$work/logged.err"
expect "LRPC_LOG=transport logs the UDP server" '^lrpc\[transport\] udp server on 127\.0\.0\.1:' "$work/logged.err"
grep -q '^lrpc\[errors\]' "$work/logged.err" && fail "a topic that was not asked for was logged"

# A server that dies during a ping run: the run stops with "peer died".
"$LRPC" ping -c 1000 -i 0.01 paper >"$work/dying.out" 2>&1 &
ping_pid=$!
sleep 0.5
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=""
wait "$ping_pid" && fail "ping of a server that died succeeded"
expect "ping notices the server died" '^lrpc ping: peer died: the server of "paper" \(pid [0-9]+\) died' "$work/dying.out"

# A dead server (its socket is left, nobody listens): ls, ping and stat say so.
[ -S "$LRPC_DIR/paper.sock" ] || fail "expected the dead server's socket to be left"
"$LRPC" ping paper >"$work/err.out" 2>&1 && fail "ping of a dead server succeeded"
expect "ping of a dead server says so" '^lrpc ping: not found: the server of "paper" is dead' "$work/err.out"
"$LRPC" stat paper >"$work/err.out" 2>&1 && fail "stat of a dead server succeeded"
expect "stat of a dead server says so" '^lrpc stat: not found: the server of "paper" is dead' "$work/err.out"
"$LRPC" ls >"$work/ls.out" 2>&1 || fail "ls exited non-zero with a dead name"
expect "ls marks the dead name" '^paper +- +- +- +\(not found: the server of "paper" is dead' "$work/ls.out"
"$LRPC" ping -c 2 -i 0 -W 0.3 "udp+clear://127.0.0.1:$port/paper" >"$work/err.out" 2>&1 && fail "udp ping of a dead server succeeded"
expect "udp ping of a dead server says so" '(nothing listens on|no answer from) 127\.0\.0\.1' "$work/err.out"

echo "PASS: lrpc ls, ping (same host in 3 modes, udp, secure udp), stat; wrong names; dead server"

#!/usr/bin/env bash
# `lrpc keygen` end to end: the files, their modes and formats, the printed public key, and
# the refusals (existing files, usage). Usage: keygen_test.sh <path to lrpc>
set -euo pipefail
lrpc=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$lrpc" keygen "$work/server" > "$work/out" || fail "keygen exited $?"
[ "$(stat -c %a "$work/server.key")" = 600 ] || fail "server.key mode is $(stat -c %a "$work/server.key")"
[ "$(stat -c %a "$work/server.pub")" = 600 ] || fail "server.pub mode is $(stat -c %a "$work/server.pub")"
grep -Eqx 'lrpc-x25519-private-key [A-Za-z0-9_-]{43}' "$work/server.key" || fail "server.key format"
grep -Eqx 'lrpc-x25519-public-key [A-Za-z0-9_-]{43}' "$work/server.pub" || fail "server.pub format"
printed=$(sed -n 's/^public key: //p' "$work/out")
[ "$printed" = "$(cut -d' ' -f2 "$work/server.pub")" ] || fail "printed key '$printed' is not the .pub's"
[ "$(cut -d' ' -f2 "$work/server.key")" != "$printed" ] || fail "private and public key are equal"

"$lrpc" keygen "$work/client" > /dev/null
[ "$(cut -d' ' -f2 "$work/client.pub")" != "$printed" ] || fail "two key pairs are the same"

before=$(cat "$work/server.key")
if "$lrpc" keygen "$work/server" 2> "$work/err"; then fail "keygen overwrote a key pair"; fi
grep -q '^lrpc keygen: already exists' "$work/err" || fail "overwrite error: $(cat "$work/err")"
[ "$(cat "$work/server.key")" = "$before" ] || fail "server.key changed"

"$lrpc" keygen --psk "$work/psk" > /dev/null
[ "$(stat -c %a "$work/psk")" = 600 ] || fail "psk mode"
grep -Eqx 'lrpc-psk [A-Za-z0-9_-]{43}' "$work/psk" || fail "psk format"

set +e
"$lrpc" keygen > /dev/null 2>&1; [ $? -eq 2 ] || fail "keygen without a prefix is not a usage error"
"$lrpc" keygen a b > /dev/null 2>&1; [ $? -eq 2 ] || fail "keygen with two prefixes is not a usage error"
"$lrpc" keygen "$work/nodir/x" 2> "$work/err"; [ $? -eq 1 ] || fail "keygen into a missing directory did not fail"
set -e
grep -q '^lrpc keygen: ' "$work/err" || fail "missing-directory error: $(cat "$work/err")"
echo "PASS: lrpc keygen writes 0600 key files, prints the public key, never overwrites"

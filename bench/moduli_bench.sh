#!/bin/sh
# primeforge moduli against ssh-keygen -M generate / -M screen: safe primes
# per CPU-hour at one size (docs/measurements/benchmarks-archive.md, "OpenSSH moduli"). CPU seconds
# (user + system) from /usr/bin/time. ssh-keygen's sieve runs whole; its
# screen is bounded to the first LINES candidates, and its sieve's CPU is
# charged in proportion (LINES / candidates).
#
#   bench/moduli_bench.sh [BITS [LINES [COUNT]]]     defaults: 2048 15000 16
#
# Needs: cargo build --release, ssh-keygen, /usr/bin/time.
set -eu
BITS=${1:-2048}
LINES=${2:-15000}
COUNT=${3:-16}
PF=${PF:-./target/release/primeforge}
D=$(mktemp -d)
cpu() { awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.1f", u + s}' "$1"; }
/usr/bin/time -v ssh-keygen -M generate -O bits="$BITS" "$D/cand" >/dev/null 2>"$D/gen.log"
CANDS=$(wc -l <"$D/cand")
/usr/bin/time -v ssh-keygen -M screen -O lines="$LINES" -f "$D/cand" "$D/safe" >/dev/null 2>"$D/screen.log"
FOUND=$(grep -c . "$D/safe" || true)
/usr/bin/time -v "$PF" moduli --bits "$BITS" --count "$COUNT" -t 1 -q --out "$D/ours" 2>"$D/ours.log"
ssh-keygen -M screen -f "$D/ours" "$D/ours.checked" >/dev/null 2>&1
GEN=$(cpu "$D/gen.log"); SCREEN=$(cpu "$D/screen.log"); OURS=$(cpu "$D/ours.log")
KEPT=$(grep -c . "$D/ours.checked" || true)
awk -v bits="$BITS" -v gen="$GEN" -v screen="$SCREEN" -v cands="$CANDS" -v lines="$LINES" \
    -v found="$FOUND" -v ours="$OURS" -v count="$COUNT" -v kept="$KEPT" 'BEGIN {
  share = gen * (lines < cands ? lines : cands) / cands
  sk = (share + screen) / found; pf = ours / count
  printf "%d bits: ssh-keygen sieve %.1f CPU s (%d candidates), screen of %d lines %.1f CPU s, %d safe primes: %.2f CPU s per prime (sieve charged %.1f s), %.0f per CPU-hour\n", bits, gen, cands, lines, screen, found, sk, share, 3600 / sk
  printf "%d bits: primeforge moduli -t 1: %.1f CPU s for %d safe primes (ssh-keygen -M screen keeps %d): %.2f CPU s per prime, %.0f per CPU-hour: %.1fx ssh-keygen\n", bits, ours, count, kept, pf, 3600 / pf, sk / pf
}'
rm -rf "$D"

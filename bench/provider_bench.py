#!/usr/bin/env python3
# Whole-command timings of openssl genpkey/dhparam with and without the
# primeforge provider, and of the primeforge CLI, interleaved (docs/measurements/benchmarks-archive.md).
# Needs: cargo build --release, and the module copied as /tmp/prov/primeforge.so.
import subprocess, time, statistics as st, sys
P = ["-provider-path", "/tmp/prov", "-provider", "primeforge", "-provider", "default", "-propquery", "provider=primeforge"]
CLI = "/work/main/target/release/primeforge"
def run(cmd):
    t = time.perf_counter(); subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); return time.perf_counter() - t
def series(name, cmds, n):
    res = {k: [] for k in cmds}
    for i in range(n):
        for k, c in cmds.items():
            res[k].append(run(c))
    print(f"== {name}, {n} interleaved samples each")
    base = st.mean(res[list(cmds)[0]])
    for k, v in res.items():
        print(f"  {k:34s} mean {st.mean(v):.4f} s  median {st.median(v):.4f} s  sd {st.stdev(v):.4f}  ratio to first {st.mean(v)/base:.3f}")
# Arguments: rsa:BITS:N and dh:BITS:N rows (default: the docs/measurements/benchmarks-archive.md set).
rows = sys.argv[1:] or ["rsa:2048:30", "rsa:3072:15", "dh:1024:10"]
for row in rows:
    kind, bits, n = row.split(":")
    n = int(n)
    if kind == "rsa":
        series(f"RSA-{bits}", {
            "openssl genpkey (default provider)": ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", f"bits:{bits}"],
            "openssl genpkey + primeforge t=1": ["openssl", "genpkey", *P, "-algorithm", "RSA", "-pkeyopt", f"bits:{bits}", "-pkeyopt", "threads:1"],
            "openssl genpkey + primeforge t=2": ["openssl", "genpkey", *P, "-algorithm", "RSA", "-pkeyopt", f"bits:{bits}", "-pkeyopt", "threads:2"],
            "primeforge rsa (CLI) t=1": [CLI, "rsa", bits, "-q", "-t", "1"],
            "primeforge rsa (CLI) t=2": [CLI, "rsa", bits, "-q", "-t", "2"],
        }, n)
    else:
        series(f"DH-{bits}", {
            "openssl dhparam (default)": ["openssl", "dhparam", bits],
            "openssl dhparam + primeforge": ["openssl", "dhparam", *P, bits],
            "primeforge dhparam (CLI) t=2": [CLI, "dhparam", bits, "-q", "-t", "2"],
        }, n)

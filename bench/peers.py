#!/usr/bin/env python3
"""primeforge against OpenSSL 4.0 in one process (issue 20's main peer).

OpenSSL 4.0 is the copy pyca `cryptography` bundles (its symbols are not
exported, so pf-bench cannot dlopen it): RSA by rsa.generate_private_key,
DH by dh.generate_parameters, both one thread. primeforge runs through its
Python binding (ctypes, the C ABI) with threads = 1 and fixed seeds. DH rows
also time the `openssl dhparam` command (the system's OpenSSL 3.0, process
start included), the tool people run today. Samples are interleaved, the
order alternating per sample; reported: mean, median and standard deviation
of wall seconds, and primeforge's speed as ratios of means (with the
standard error of that ratio) and of medians.

    PRIMEFORGE_LIB=target/release/libprimeforge.so python3 bench/peers.py [--no-cli] [rsa:BITS:N[:FIRST] | dh:BITS:N[:FIRST] | dsa:BITS:N[:FIRST] | dhx:BITS:N[:FIRST] ...]

--no-cli leaves the `openssl dhparam` column out of DH rows (OpenSSL 4.0
alone: at 2048 bits each of its samples takes seconds to minutes, and the
command's roughly doubles a run's time).

dsa and dhx rows are FIPS 186-4 domain parameters (A.1.1.2) with q of 256
bits (160 for p of 1024): OpenSSL 4.0 by dsa.generate_parameters (its
DSA_generate_parameters_ex picks FIPS 186-4 and that q for 2048 bits and
up), and the OpenSSL 3.0 command, `openssl genpkey -genparam` with
type fips186_4 (for dhx: DHX, dh_paramgen_type 2; OpenSSL makes DH
parameters of 2048 bits only, and pyca has no DHX generation, so dhx rows
compare with the command alone and the DSA row stands for OpenSSL 4.0's
same FFC code).

primeforge's seeds are those of samples FIRST … FIRST + N − 1 (FIRST = 0 by
default): runs with disjoint ranges are independent samples and can be
pooled; runs with the same range repeat primeforge's work.
"""
import os
import statistics as st
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
import primeforge  # noqa: E402
from cryptography.hazmat.backends.openssl import backend  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import dh, dsa, rsa  # noqa: E402


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def seed(kind, bits, i):
    s = bytearray(32)
    s[0] = kind
    s[1:5] = bits.to_bytes(4, "little")
    s[5:9] = i.to_bytes(4, "little")
    s[31] = 0x5A
    return bytes(s)


def row(kind, bits, n, first=0, cli=True):
    bits, n, first = int(bits), int(n), int(first)
    if kind == "rsa":
        if bits < 1024:
            print(f"\nRSA-{bits}: pyca cryptography refuses keys below 1024 bits (see pf-bench's nettle rows)")
            return
        peers = {
            "primeforge": lambda i: primeforge.generate_rsa(bits, threads=1, seed=seed(0, bits, i)),
            "OpenSSL 4.0": lambda i: rsa.generate_private_key(65537, bits),
        }
    elif kind in ("dsa", "dhx"):
        q = 160 if bits == 1024 else 256
        algorithm, opts = (("DSA", [f"pbits:{bits}", f"qbits:{q}", "type:fips186_4"]) if kind == "dsa" else
                           ("DHX", [f"dh_paramgen_prime_len:{bits}", f"dh_paramgen_subprime_len:{q}",
                                    "dh_paramgen_type:2"]))
        cli = ["openssl", "genpkey", "-genparam", "-algorithm", algorithm, "-out", "/dev/null"]
        for o in opts:
            cli += ["-pkeyopt", o]
        peers = {
            "primeforge": lambda i: primeforge.generate_fips186(bits, q_size=q, threads=1,
                                                                seed=seed(2, bits, i)),
            f"openssl genpkey {algorithm} (3.0 CLI)": lambda i: subprocess.run(
                cli, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        }
        if kind == "dsa":
            peers["OpenSSL 4.0"] = lambda i: dsa.generate_parameters(bits)
    else:
        peers = {
            "primeforge": lambda i: primeforge.generate_dh(bits, generator=2, threads=1, seed=seed(1, bits, i)),
            "OpenSSL 4.0": lambda i: dh.generate_parameters(2, bits),
        }
        if cli:
            peers["openssl dhparam (3.0 CLI)"] = lambda i: subprocess.run(
                ["openssl", "dhparam", "-out", "/dev/null", str(bits)],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = {k: [] for k in peers}
    names = list(peers)
    for i in range(first, first + n):
        order = names if i % 2 == 0 else names[::-1]
        for k in order:
            res[k].append(timed(lambda: peers[k](i)))
    ours = res["primeforge"]
    span = f", seeds of samples {first}–{first + n - 1}" if first else ""
    print(f"\n{kind.upper()}-{bits}, {n} interleaved samples{span}, one thread each")
    print("| | mean s | median s | sd s | primeforge faster by (means) | ± standard error | (medians) |")
    print("|---|---|---|---|---|---|---|")
    for k, v in res.items():
        sd = st.stdev(v) if len(v) > 1 else 0.0
        if k == "primeforge":
            print(f"| {k} | {st.mean(v):.4f} | {st.median(v):.4f} | {sd:.4f} | | | |")
        else:
            ratio = st.mean(v) / st.mean(ours)
            print(f"| {k} | {st.mean(v):.4f} | {st.median(v):.4f} | {sd:.4f} | "
                  f"{ratio:.2f}× | ±{ratio_error(ratio, v, ours):.2f} | "
                  f"{st.median(v) / st.median(ours):.2f}× |")
    sys.stdout.flush()


def ratio_error(ratio, a, b):
    """Standard error of mean(a)/mean(b) for independent samples (first-order
    propagation: the relative errors of the two means add in quadrature).
    One key's time has a standard deviation near its mean, so a ratio from
    n samples carries about ±0.9·ratio/√n; a target is met only when the
    ratio clears it by a few of these."""
    if len(a) < 2 or len(b) < 2:
        return float("nan")
    rel = lambda v: st.stdev(v) / st.mean(v) / len(v) ** 0.5  # noqa: E731
    return ratio * (rel(a) ** 2 + rel(b) ** 2) ** 0.5


def main():
    args = sys.argv[1:]
    cli = "--no-cli" not in args
    args = [a for a in args if a != "--no-cli"]
    rows = args or ["rsa:1024:40", "rsa:2048:30", "rsa:3072:16", "rsa:4096:8",
                            "dh:1024:30", "dh:2048:8"]
    print(f"primeforge {primeforge.version()}; peer {backend.openssl_version_text()} "
          f"(pyca cryptography, in process)")
    for r in rows:
        row(*r.split(":"), cli=cli)


if __name__ == "__main__":
    main()

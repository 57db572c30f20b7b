"""A program for tests/python.rs: the Python package's calls with secrets,
each in a region that the test traces with ptrace (tests/common/trace.rs)
and that this program ends by sending its thread SIGSTOP. Regions: 1, the
control (the seed copied by memcpy into a bytearray, then junk through the
same registers); 2, generate_rsa with the seed on 2 threads; 3,
pem_encrypted with the passphrase; 4, import_rsa of it; 5, close of both
keys.

    python3 trace_regions.py DIR BITS   (DIR holds seed and pass, 32 bytes each)
"""

import os
import signal
import sys
import threading

import primeforge


def read_secret(path: str) -> bytes:
    # read(2) straight into the bytes object: no copy passes the bytes
    # through registers.
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, 32)
    finally:
        os.close(fd)
    if len(data) != 32:
        sys.exit("short secret " + path)
    return data


def mark() -> None:
    signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)


def main() -> None:
    directory, bits = sys.argv[1], int(sys.argv[2])
    seed = read_secret(os.path.join(directory, "seed"))
    password = read_secret(os.path.join(directory, "pass"))
    junk = bytes(range(1, 33))
    mark()
    bytearray(seed)
    bytearray(junk)
    mark()
    key = primeforge.generate_rsa(bits, threads=2, seed=seed)
    mark()
    pem = key.pem_encrypted(password)
    mark()
    again = primeforge.import_rsa(pem, password)
    mark()
    key.close()
    again.close()
    mark()


main()

"""primeforge for Python: RSA keys and DH parameters on every core.

A ctypes binding to libprimeforge (standard library only)::

    import primeforge
    key = primeforge.generate_rsa(3072)             # all cores
    open("key.pem", "wb").write(key.pem())
    dh = primeforge.generate_dh(2048, progress=lambda ev: print(ev.candidates))
    ff = primeforge.named_group("ffdhe2048")         # RFC 7919, instant
    problems = primeforge.check_dh(ff.pem())         # 0: fine

    # In an asyncio program the generation runs on the library's threads
    # and the event loop keeps running (the job's descriptor wakes it):
    dh = await primeforge.generate_dh_async(4096)

The library is found through $PRIMEFORGE_LIB, then inside this package
(the wheel built by `pip install ./bindings/python` carries it), then the
system's library path (libprimeforge.so.0.2, the SONAME of this release). Failures raise primeforge.Error (a subclass per
status); a progress callback returning True cancels (Cancelled); Ctrl-C
during a generation cancels it and raises KeyboardInterrupt.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import glob
import os
import signal
import threading
from typing import Any, Callable, Optional, Union

BytesLike = Union[bytes, bytearray, memoryview]
ProgressCallback = Callable[["Progress"], Optional[bool]]

__all__ = [
    "Error", "NullArgument", "InvalidArgument", "BufferTooSmall", "Cancelled",
    "NoMemory", "ThreadsError", "EntropyError", "InternalError", "Unsupported",
    "DecodeError", "CheckFailed", "RsaKey", "DhParams", "Progress",
    "generate_rsa", "generate_dh", "named_group", "check_dh", "version",
    "NAMED_GROUPS", "DH_CHECK_BITS", "Forked", "WrongKind", "AlreadyTaken",
    "Job", "start_rsa", "start_dh", "generate_rsa_async", "generate_dh_async",
    "PassphraseError", "import_rsa", "import_dh", "RSA_CHECK_BITS", "RSA_CHECK_FIPS_MASK",
    "DhBatch",
]


def _load():
    """$PRIMEFORGE_LIB first (tests, a library of your own), then the
    library built into this package (a wheel), then the system's."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = []
    if os.environ.get("PRIMEFORGE_LIB"):
        candidates.append(os.environ["PRIMEFORGE_LIB"])
    candidates += sorted(glob.glob(os.path.join(here, "_native*.so")))
    found = ctypes.util.find_library("primeforge")
    if found:
        candidates.append(found)
    candidates.append("libprimeforge.so.0.2")
    last = None
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError as e:  # try the next one
            last = e
    raise ImportError("libprimeforge not found (set PRIMEFORGE_LIB): %s" % last)


_lib = _load()

u8p = ctypes.POINTER(ctypes.c_uint8)


class _Progress(ctypes.Structure):
    _fields_ = [
        ("candidates", ctypes.c_uint64),
        ("survivors", ctypes.c_uint64),
        ("exponentiations", ctypes.c_uint64),
        ("elapsed_ns", ctypes.c_uint64),
        ("primes_found", ctypes.c_uint32),
        ("primes_needed", ctypes.c_uint32),
    ]


class _Stats(ctypes.Structure):
    _fields_ = [
        ("candidates", ctypes.c_uint64),
        ("survivors", ctypes.c_uint64),
        ("exponentiations", ctypes.c_uint64),
        ("elapsed_ns", ctypes.c_uint64),
    ]


_PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(_Progress))


class _Options(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("threads", ctypes.c_uint32),
        ("seed", u8p),
        ("seed_len", ctypes.c_size_t),
        ("progress", _PROGRESS_FN),
        ("user_data", ctypes.c_void_p),
        ("stats", ctypes.POINTER(_Stats)),
        ("flags", ctypes.c_uint32),
    ]


class _Opaque(ctypes.Structure):
    pass


_h = ctypes.POINTER(_Opaque)
_hp = ctypes.POINTER(_h)
_status = ctypes.c_uint32


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_pf_status_str = _fn("pf_status_str", ctypes.c_char_p, ctypes.c_uint32)
_pf_version = _fn("pf_version", ctypes.c_char_p)
_pf_last_error_message = _fn("pf_last_error_message", ctypes.c_char_p)
_pf_options_default = _fn("pf_options_default", _Options)
_pf_buffer_new = _fn("pf_buffer_new", _status, ctypes.c_size_t, _hp)
_pf_buffer_data = _fn("pf_buffer_data", u8p, _h)
_pf_buffer_data_mut = _fn("pf_buffer_data_mut", u8p, _h)
_pf_buffer_len = _fn("pf_buffer_len", ctypes.c_size_t, _h)
_pf_buffer_locked = _fn("pf_buffer_locked", ctypes.c_bool, _h)
_pf_buffer_check = _fn("pf_buffer_check", _status, _h)
_pf_buffer_free = _fn("pf_buffer_free", None, _h)
_pf_rsa_generate = _fn("pf_rsa_generate", _status, ctypes.c_uint32, ctypes.c_uint32, _hp)
_pf_rsa_generate_ex = _fn("pf_rsa_generate_ex", _status, ctypes.c_uint32, ctypes.c_uint64,
                          ctypes.c_uint32, ctypes.POINTER(_Options), _hp)
_pf_rsa_export = _fn("pf_rsa_export", _status, _h, ctypes.c_uint32, _hp)
_pf_rsa_component = _fn("pf_rsa_component", _status, _h, ctypes.c_uint32, _hp)
_pf_rsa_bits = _fn("pf_rsa_bits", ctypes.c_uint32, _h)
_pf_rsa_primes = _fn("pf_rsa_primes", ctypes.c_uint32, _h)
_pf_rsa_free = _fn("pf_rsa_free", None, _h)
_pf_dh_generate = _fn("pf_dh_generate", _status, ctypes.c_uint32, ctypes.c_uint32,
                      ctypes.c_uint32, _hp)
_pf_dh_generate_ex = _fn("pf_dh_generate_ex", _status, ctypes.c_uint32, ctypes.c_uint32,
                         ctypes.c_uint32, ctypes.POINTER(_Options), _hp)
_pf_dh_named = _fn("pf_dh_named", _status, ctypes.c_uint32, _hp)
_pf_dh_export = _fn("pf_dh_export", _status, _h, ctypes.c_uint32, _hp)
_pf_dh_component = _fn("pf_dh_component", _status, _h, ctypes.c_uint32, _hp)
_pf_dh_bits = _fn("pf_dh_bits", ctypes.c_uint32, _h)
_pf_dh_free = _fn("pf_dh_free", None, _h)
_pf_rsa_generate_start = _fn("pf_rsa_generate_start", _status, ctypes.c_uint32, ctypes.c_uint64,
                             ctypes.c_uint32, ctypes.POINTER(_Options), _hp)
_pf_dh_generate_start = _fn("pf_dh_generate_start", _status, ctypes.c_uint32, ctypes.c_uint32,
                            ctypes.c_uint32, ctypes.POINTER(_Options), _hp)
_pf_job_fd = _fn("pf_job_fd", ctypes.c_int32, _h)
_pf_job_poll = _fn("pf_job_poll", _status, _h, ctypes.POINTER(_Progress))
_pf_job_wait = _fn("pf_job_wait", _status, _h, ctypes.c_uint64)
_pf_job_cancel = _fn("pf_job_cancel", _status, _h)
_pf_job_take_rsa = _fn("pf_job_take_rsa", _status, _h, _hp)
_pf_job_take_dh = _fn("pf_job_take_dh", _status, _h, _hp)
_pf_job_free = _fn("pf_job_free", None, _h)
_pf_rsa_import = _fn("pf_rsa_import", _status, u8p, ctypes.c_size_t, u8p, ctypes.c_size_t, _hp)
_pf_rsa_check = _fn("pf_rsa_check", _status, _h, ctypes.POINTER(ctypes.c_uint32))
_pf_rsa_export_encrypted = _fn("pf_rsa_export_encrypted", _status, _h, ctypes.c_uint32, u8p,
                               ctypes.c_size_t, ctypes.c_uint32, _hp)
_pf_dh_import = _fn("pf_dh_import", _status, u8p, ctypes.c_size_t, _hp)
_pf_dh_check = _fn("pf_dh_check", _status, u8p, ctypes.c_size_t,
                   ctypes.POINTER(ctypes.c_uint32))
_pf_dh_batch_new = _fn("pf_dh_batch_new", _status, ctypes.c_uint32, ctypes.c_uint32,
                       ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(_Options), _hp)
_pf_dh_batch_next = _fn("pf_dh_batch_next", _status, _h, ctypes.POINTER(_Options), _hp)
_pf_dh_batch_free = _fn("pf_dh_batch_free", None, _h)


class Error(Exception):
    """A primeforge call failed; .status is the pf_status code, the message
    what the library said (pf_last_error_message), e.g. "invalid argument:
    bits must be even, 512..=16384"."""

    status = None

    def __init__(self, status, message=None):
        self.status = status
        super().__init__(message or _pf_status_str(status).decode())


def _raise(status):
    # Read on this thread right after the failing call (ctypes calls run on
    # the calling OS thread), before any other primeforge call.
    message = _pf_last_error_message().decode(errors="replace")
    raise _ERRORS.get(status, Error)(status, message)


class NullArgument(Error): pass
class InvalidArgument(Error, ValueError): pass
class BufferTooSmall(Error): pass
class Cancelled(Error): pass
class NoMemory(Error, MemoryError): pass
class ThreadsError(Error): pass
class EntropyError(Error): pass
class InternalError(Error): pass
class Unsupported(Error): pass
class DecodeError(Error, ValueError): pass
class CheckFailed(Error): pass
class Forked(Error): pass
class WrongKind(Error, TypeError): pass
class AlreadyTaken(Error): pass
class PassphraseError(Error, ValueError): pass


PF_PENDING = 13

_ERRORS = {1: NullArgument, 2: InvalidArgument, 3: BufferTooSmall, 4: Cancelled,
           5: NoMemory, 6: ThreadsError, 7: EntropyError, 8: InternalError,
           9: Unsupported, 10: DecodeError, 11: CheckFailed,
           12: Forked, 14: WrongKind, 15: AlreadyTaken, 16: PassphraseError}


def _bytes_arg(data):
    """(pointer, length, keep-alive) for bytes passed to C."""
    data = bytes(data)
    buf = (ctypes.c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0")
    return ctypes.cast(buf, u8p), len(data), buf


def _check(status):
    if status != 0:
        _raise(status)


def version() -> str:
    """The library version, e.g. '0.1.0'."""
    return _pf_version().decode()


class Progress:
    """A progress event: counters, elapsed seconds, primes found/needed."""

    __slots__ = ("candidates", "survivors", "exponentiations", "elapsed",
                 "primes_found", "primes_needed")

    def __init__(self, ev):
        self.candidates = ev.candidates
        self.survivors = ev.survivors
        self.exponentiations = ev.exponentiations
        self.elapsed = ev.elapsed_ns / 1e9
        self.primes_found = ev.primes_found
        self.primes_needed = ev.primes_needed


def _take(buf):
    """Copies a pf_buffer's bytes and frees it. (The copy is an ordinary
    Python bytes object: secrets you export leave secure memory here.)"""
    try:
        n = _pf_buffer_len(buf)
        return ctypes.string_at(_pf_buffer_data(buf), n) if n else b""
    finally:
        _pf_buffer_free(buf)


class _Call:
    """Options for one generation: seed, threads, the progress callback,
    Ctrl-C, and the work counters."""

    def __init__(self, threads, seed, progress):
        self.opts = _pf_options_default()
        self.opts.threads = threads
        self.stats = _Stats()
        self.opts.stats = ctypes.pointer(self.stats)
        self._seed = None
        if seed is not None:
            seed = bytes(seed)
            # Any length is passed on; the library insists on 32 bytes.
            self._seed = (ctypes.c_uint8 * max(len(seed), 1)).from_buffer_copy(seed or b"\0")
            self.opts.seed = ctypes.cast(self._seed, u8p)
            self.opts.seed_len = len(seed)
        self.user_cb = progress
        self.interrupted = False
        self.error = None
        # Always install a callback: it runs on the calling thread every
        # ~50 ms, which is where Python can notice Ctrl-C.
        self._cb = _PROGRESS_FN(self._on_progress)
        self.opts.progress = self._cb

    def _on_progress(self, _user, ev):
        try:
            if self.interrupted:
                return 1
            if self.user_cb is not None and self.user_cb(Progress(ev.contents)):
                return 1
            return 0
        except KeyboardInterrupt:
            self.interrupted = True
            return 1
        except BaseException as e:  # never let an exception cross into C
            self.error = e
            return 1

    def _on_sigint(self, _signum, _frame):
        # Runs (in Python) the next time the progress callback executes:
        # note it, and the callback cancels the generation.
        self.interrupted = True

    def run(self, fn, *args):
        """Calls fn(*args, options) with Ctrl-C turned into a cancel."""
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            return fn(*args)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def finish(self, status):
        if self.interrupted:
            raise KeyboardInterrupt
        if self.error is not None:
            raise self.error
        _check(status)

    def counters(self):
        s = self.stats
        return {"candidates": s.candidates, "survivors": s.survivors,
                "exponentiations": s.exponentiations, "elapsed": s.elapsed_ns / 1e9}


_RSA_PARTS = {"n": 1, "e": 2, "d": 3, "p": 4, "q": 5, "dp": 6, "dq": 7, "qinv": 8}


class _Owned:
    """A library handle owned by a Python object: freed (and wiped by the
    library) by close(), at the end of a `with` block, or when collected."""

    _what = "object"

    def _free(self, handle):
        raise NotImplementedError

    def __del__(self):
        self.close()

    def close(self):
        """Frees the handle now (also done when collected)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            self._free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not getattr(self, "_h", None):
            raise ValueError("%s is closed" % self._what)
        return self._h


class RsaKey(_Owned):
    """An RSA private key held in primeforge's secure memory."""

    _what = "key"

    def _free(self, handle):
        _pf_rsa_free(handle)

    def __init__(self, handle, stats=None):
        self._h = handle
        self.stats = stats or {}


    def export(self, fmt):
        out = _h()
        _check(_pf_rsa_export(self._handle(), fmt, ctypes.byref(out)))
        return _take(out)

    def pem(self, pkcs1: bool = False) -> bytes:
        """Private key as PEM: PKCS#8 ("PRIVATE KEY") or PKCS#1."""
        return self.export(3 if pkcs1 else 1)

    def der(self, pkcs1: bool = False) -> bytes:
        return self.export(4 if pkcs1 else 2)

    def public_pem(self) -> bytes:
        """SubjectPublicKeyInfo ("PUBLIC KEY")."""
        return self.export(5)

    def public_der(self) -> bytes:
        return self.export(6)

    def _part(self, name):
        out = _h()
        _check(_pf_rsa_component(self._handle(), _RSA_PARTS[name], ctypes.byref(out)))
        return int.from_bytes(_take(out), "big")

    n = property(lambda self: self._part("n"))
    e = property(lambda self: self._part("e"))
    d = property(lambda self: self._part("d"))
    p = property(lambda self: self._part("p"))
    q = property(lambda self: self._part("q"))
    dp = property(lambda self: self._part("dp"))
    dq = property(lambda self: self._part("dq"))
    qinv = property(lambda self: self._part("qinv"))

    def check(self) -> int:
        """Problem bits (0: consistent and FIPS 186-5): see RSA_CHECK_BITS;
        bits in RSA_CHECK_FIPS_MASK only say the key is not FIPS 186-5."""
        problems = ctypes.c_uint32()
        _check(_pf_rsa_check(self._handle(), ctypes.byref(problems)))
        return problems.value

    def pem_encrypted(self, password: Union[str, bytes], kdf: str = "scrypt") -> bytes:
        """PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2, AES-256-CBC) under
        `password` (bytes or str); kdf "scrypt" or "pbkdf2"."""
        return self._encrypted(1, password, kdf)

    def der_encrypted(self, password: Union[str, bytes], kdf: str = "scrypt") -> bytes:
        return self._encrypted(2, password, kdf)

    def _encrypted(self, fmt, password, kdf):
        if isinstance(password, str):
            password = password.encode()
        kdfs = {"scrypt": 1, "pbkdf2": 2}
        if kdf not in kdfs:
            raise InvalidArgument(2, "kdf must be 'scrypt' or 'pbkdf2'")
        p, n, _keep = _bytes_arg(password)
        out = _h()
        _check(_pf_rsa_export_encrypted(self._handle(), fmt, p, n, kdfs[kdf], ctypes.byref(out)))
        return _take(out)

    def to_cryptography(self) -> Any:
        """The key as a pyca/cryptography RSAPrivateKey (needs the
        `cryptography` package: pip install primeforge-keygen[cryptography]).
        The copy lives in OpenSSL's memory, outside primeforge's."""
        from cryptography.hazmat.primitives import serialization
        return serialization.load_der_private_key(self.der(), password=None)

    @property
    def bits(self) -> int:
        return _pf_rsa_bits(self._handle())

    @property
    def primes(self):
        return _pf_rsa_primes(self._handle())


class DhParams:
    """Diffie-Hellman parameters (public values)."""

    def __init__(self, handle, stats=None):
        self._h = handle
        self.stats = stats or {}

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _pf_dh_free(h)

    def export(self, fmt):
        out = _h()
        _check(_pf_dh_export(self._h, fmt, ctypes.byref(out)))
        return _take(out)

    def pem(self, x942: bool = False) -> bytes:
        """PKCS#3 "DH PARAMETERS" (or X9.42 with q)."""
        return self.export(11 if x942 else 9)

    def der(self, x942: bool = False) -> bytes:
        return self.export(12 if x942 else 10)

    def _part(self, part):
        out = _h()
        _check(_pf_dh_component(self._h, part, ctypes.byref(out)))
        return int.from_bytes(_take(out), "big")

    p = property(lambda self: self._part(1))
    q = property(lambda self: self._part(2))
    g = property(lambda self: self._part(3))

    def to_cryptography(self) -> Any:
        """The parameters as pyca/cryptography DHParameters (needs the
        `cryptography` package)."""
        from cryptography.hazmat.primitives import serialization
        return serialization.load_der_parameters(self.der())

    @property
    def bits(self) -> int:
        return _pf_dh_bits(self._h)


def generate_rsa(bits: int = 3072, threads: int = 0, exponent: int = 65537, primes: int = 2,
                 seed: Optional[BytesLike] = None, progress: Optional[ProgressCallback] = None,
                 fips: bool = False, provable: bool = False) -> "RsaKey":
    """Generates an RSA key by FIPS 186-5 A.1.3 on `threads` threads (0 = all
    cores). The key meets FIPS 186-5 when bits >= 2048, exponent > 65536 and
    primes == 2; `fips=True` raises InvalidArgument for anything else.
    `provable=True` makes proven primes (Pocklington certificates, as
    nettle does) instead of probable ones; not with `fips=True`.

    `seed` (32 bytes, not all zero) makes the key a deterministic function
    of the seed. `progress(ev)` is called on this thread every 50 ms and
    whenever a prime is found; returning True cancels (raises Cancelled).
    """
    call = _Call(threads, seed, progress)
    call.opts.flags = _rsa_flags(fips, provable)
    out = _h()
    st = call.run(_pf_rsa_generate_ex, bits, exponent, primes, ctypes.byref(call.opts),
                  ctypes.byref(out))
    call.finish(st)
    return RsaKey(out, call.counters())


def generate_dh(bits: int = 2048, generator: int = 2, threads: int = 0, legacy: bool = False,
                seed: Optional[BytesLike] = None,
                progress: Optional[ProgressCallback] = None) -> "DhParams":
    """Generates DH parameters: a safe prime of `bits` bits for `generator`."""
    call = _Call(threads, seed, progress)
    out = _h()
    st = call.run(_pf_dh_generate_ex, bits, generator, 1 if legacy else 0,
                  ctypes.byref(call.opts), ctypes.byref(out))
    call.finish(st)
    return DhParams(out, call.counters())


class DhBatch(_Owned):
    """Many DH parameter sets of one size from one sieve: the consecutive
    safe primes above one random start (pf_dh_batch_*). The sieve is set
    up once and deeper than a single generate_dh can afford, so each prime
    costs less. `expected` (1 to 4096) sizes the sieve; more may be taken.
    With a 32-byte `seed` the sequence is deterministic at any thread
    count. Each next() is one search with its own threads and progress;
    after a cancel the batch is where it was.

        with DhBatch(2048, expected=8) as batch:
            pools = [batch.next(threads=0) for _ in range(8)]
    """

    _what = "batch"

    def _free(self, handle):
        _pf_dh_batch_free(handle)

    def __init__(self, bits: int = 2048, generator: int = 2, expected: int = 16,
                 legacy: bool = False, seed: Optional[BytesLike] = None):
        call = _Call(0, seed, None)
        out = _h()
        _check(_pf_dh_batch_new(bits, generator, 1 if legacy else 0, expected,
                                ctypes.byref(call.opts), ctypes.byref(out)))
        self._h = out

    def next(self, threads: int = 0,
             progress: Optional[ProgressCallback] = None) -> "DhParams":
        """The batch's next safe prime, as DhParams (Ctrl-C and a progress
        callback returning True cancel, as for generate_dh)."""
        call = _Call(threads, None, progress)
        out = _h()
        st = call.run(_pf_dh_batch_next, self._handle(), ctypes.byref(call.opts),
                      ctypes.byref(out))
        call.finish(st)
        return DhParams(out, call.counters())


PF_RSA_FIPS = 1
PF_RSA_PROVABLE = 2


def _rsa_flags(fips, provable):
    return (PF_RSA_FIPS if fips else 0) | (PF_RSA_PROVABLE if provable else 0)

NAMED_GROUPS = {"ffdhe2048": 1, "ffdhe3072": 2, "ffdhe4096": 3, "ffdhe6144": 4,
                "ffdhe8192": 5, "modp2048": 6, "modp3072": 7, "modp4096": 8,
                "modp6144": 9, "modp8192": 10}

DH_CHECK_BITS = {0x01: "p not prime", 0x02: "p not a safe prime",
                 0x08: "unsuitable generator", 0x10: "q not prime",
                 0x20: "invalid q", 0x80: "modulus too small",
                 0x100: "modulus too large"}


def named_group(name: str) -> "DhParams":
    """An RFC 7919 (ffdhe*) or RFC 3526 (modp*) group: instant."""
    try:
        gid = NAMED_GROUPS[name.lower().replace("_", "")]
    except KeyError:
        raise InvalidArgument(2, "unknown group %r" % (name,)) from None
    out = _h()
    _check(_pf_dh_named(gid, ctypes.byref(out)))
    return DhParams(out)


def check_dh(data: BytesLike) -> int:
    """Problem bits for encoded DH parameters (PEM or DER, PKCS#3 or X9.42):
    0 when nothing is wrong; see DH_CHECK_BITS. Malformed: DecodeError."""
    data = bytes(data)
    buf = (ctypes.c_uint8 * max(len(data), 1)).from_buffer_copy(data or b"\0")
    problems = ctypes.c_uint32()
    _check(_pf_dh_check(ctypes.cast(buf, u8p), len(data), ctypes.byref(problems)))
    return problems.value


class Job(_Owned):
    """A generation running in the background on the library's threads
    (from start_rsa or start_dh). The calling thread is free at once.

    fileno() becomes readable when the job ends (use it with select,
    selectors or an event loop); poll() never blocks; wait() does; cancel()
    returns at once and the job ends soon with Cancelled; result() takes
    the key or parameters (once). close() — also on garbage collection and
    at the end of a `with` block — cancels a running job and joins its
    threads.
    """

    def __init__(self, handle, kind):
        self._h = handle
        self._kind = kind

    _what = "job"

    def _free(self, handle):
        _pf_job_free(handle)

    def fileno(self) -> int:
        """The descriptor that becomes readable when the job ends. Owned by
        the job: never read it or close it."""
        fd = _pf_job_fd(self._handle())
        if fd < 0:
            raise Forked(12)
        return fd

    def poll(self) -> "tuple[bool, Progress]":
        """(done, Progress) without waiting. done is True once the job has
        ended, successfully or not (result() then returns or raises)."""
        ev = _Progress()
        st = _pf_job_poll(self._handle(), ctypes.byref(ev))
        if st == 12:
            raise Forked(12)
        return st != PF_PENDING, Progress(ev)

    def done(self) -> bool:
        return self.poll()[0]

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the job ends or `timeout` seconds pass; returns
        whether it has ended."""
        ms = 2 ** 64 - 1 if timeout is None else max(0, int(timeout * 1000))
        st = _pf_job_wait(self._handle(), ms)
        if st == 12:
            raise Forked(12)
        return st != PF_PENDING

    def cancel(self) -> None:
        """Asks the job to stop; returns at once."""
        _check(_pf_job_cancel(self._handle()))

    def result(self) -> "Union[RsaKey, DhParams]":
        """The RsaKey or DhParams, once the job has ended: raises the job's
        error (Cancelled, ...), AlreadyTaken, or Error(PF_PENDING) while it
        still runs."""
        out = _h()
        take = _pf_job_take_rsa if self._kind == "rsa" else _pf_job_take_dh
        st = take(self._handle(), ctypes.byref(out))
        if st == PF_PENDING:
            raise Error(st, "the job is still running")
        _check(st)
        _, p = self.poll()
        counters = {"candidates": p.candidates, "survivors": p.survivors,
                    "exponentiations": p.exponentiations, "elapsed": p.elapsed}
        return RsaKey(out, counters) if self._kind == "rsa" else DhParams(out, counters)


def _job_options(threads, seed, fips=False, provable=False):
    opts = _pf_options_default()
    opts.threads = threads
    keep = None
    if seed is not None:
        seed = bytes(seed)
        keep = (ctypes.c_uint8 * max(len(seed), 1)).from_buffer_copy(seed or b"\0")
        opts.seed = ctypes.cast(keep, u8p)
        opts.seed_len = len(seed)
    opts.flags = _rsa_flags(fips, provable)
    # The library copies the options and the seed before start returns.
    return opts, keep


def start_rsa(bits: int = 3072, threads: int = 0, exponent: int = 65537, primes: int = 2,
              seed: Optional[BytesLike] = None, fips: bool = False,
              provable: bool = False) -> "Job":
    """Starts generate_rsa's work in the background and returns a Job."""
    opts, _keep = _job_options(threads, seed, fips, provable)
    out = _h()
    _check(_pf_rsa_generate_start(bits, exponent, primes, ctypes.byref(opts), ctypes.byref(out)))
    return Job(out, "rsa")


def start_dh(bits: int = 2048, generator: int = 2, threads: int = 0, legacy: bool = False,
             seed: Optional[BytesLike] = None) -> "Job":
    """Starts generate_dh's work in the background and returns a Job."""
    opts, _keep = _job_options(threads, seed)
    out = _h()
    _check(_pf_dh_generate_start(bits, generator, 1 if legacy else 0, ctypes.byref(opts),
                                 ctypes.byref(out)))
    return Job(out, "dh")


async def _await_job(job, progress, interval):
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    fd = job.fileno()

    def on_readable():
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(fd, on_readable)
    ticker = None

    def tick():
        nonlocal ticker
        done, ev = job.poll()
        if done:
            return
        try:
            stop = progress(ev)
        except BaseException as e:  # report it from the awaiting task
            job.cancel()
            if not ended.done():
                ended.set_exception(e)
            return
        if stop:
            job.cancel()
        else:
            ticker = loop.call_later(interval, tick)

    if progress is not None:
        ticker = loop.call_later(interval, tick)
    try:
        await ended
        return job.result()
    except asyncio.CancelledError:
        # The awaiting task was cancelled: stop the generation too. close()
        # below joins its threads (about 10 ms plus one exponentiation).
        job.cancel()
        raise
    finally:
        if ticker is not None:
            ticker.cancel()
        loop.remove_reader(fd)
        job.close()


async def generate_rsa_async(bits: int = 3072, threads: int = 0, exponent: int = 65537,
                             primes: int = 2, seed: Optional[BytesLike] = None,
                             fips: bool = False, progress: Optional[ProgressCallback] = None,
                             interval: float = 0.1, provable: bool = False) -> "RsaKey":
    """generate_rsa for asyncio: the event loop keeps running while the
    library's threads work, woken by the job's descriptor. `progress(ev)`
    runs on the loop every `interval` seconds; returning True cancels
    (raises Cancelled). Cancelling the awaiting task cancels the job."""
    job = start_rsa(bits, threads, exponent, primes, seed, fips, provable)
    return await _await_job(job, progress, interval)


async def generate_dh_async(bits: int = 2048, generator: int = 2, threads: int = 0,
                            legacy: bool = False, seed: Optional[BytesLike] = None,
                            progress: Optional[ProgressCallback] = None,
                            interval: float = 0.1) -> "DhParams":
    """generate_dh for asyncio (see generate_rsa_async)."""
    job = start_dh(bits, generator, threads, legacy, seed)
    return await _await_job(job, progress, interval)


RSA_CHECK_BITS = {0x001: "modulus too large", 0x002: "modulus too small",
                  0x004: "too many primes", 0x008: "component too large",
                  0x010: "bad public exponent", 0x020: "n is not the product of the primes",
                  0x040: "a prime is not prime", 0x080: "bad private exponent",
                  0x100: "bad CRT exponent", 0x200: "bad CRT coefficient",
                  0x10000: "not FIPS 186-5: size or prime count",
                  0x20000: "not FIPS 186-5: public exponent",
                  0x40000: "not FIPS 186-5: prime bounds",
                  0x80000: "not FIPS 186-5: private exponent"}
RSA_CHECK_FIPS_MASK = 0xFFFF0000


def import_rsa(data: BytesLike, password: Optional[Union[str, bytes]] = None) -> "RsaKey":
    """Reads an RSA private key (PEM or DER; PKCS#1, PKCS#8, or encrypted
    PKCS#8 with `password`) into secure memory. Raises DecodeError (not a
    private key, malformed) or PassphraseError (encrypted: missing/wrong)."""
    p, n, _keep = _bytes_arg(data)
    if isinstance(password, str):
        password = password.encode()
    pw, pn, _keep_pw = (None, 0, None) if password is None else _bytes_arg(password)
    out = _h()
    _check(_pf_rsa_import(p, n, pw, pn, ctypes.byref(out)))
    return RsaKey(out)


def import_dh(data: BytesLike) -> "DhParams":
    """Reads DH parameters (PEM or DER, PKCS#3 or X9.42)."""
    p, n, _keep = _bytes_arg(data)
    out = _h()
    _check(_pf_dh_import(p, n, ctypes.byref(out)))
    return DhParams(out)

"""primeforge for Python: RSA keys and DH parameters on every core.

A ctypes binding to libprimeforge (standard library only)::

    import primeforge
    key = primeforge.generate_rsa(key_size=3072, public_exponent=65537)   # all cores
    open("key.pem", "wb").write(key.pem())
    dh = primeforge.generate_dh(key_size=2048, progress=lambda ev: print(ev.candidates))
    ff = primeforge.named_group("ffdhe2048")         # RFC 7919, instant
    problems = primeforge.check_dh(ff.pem())         # 0: fine

    # In an asyncio program the generation runs on the library's threads
    # and the event loop keeps running (the job's descriptor wakes it):
    dh = await primeforge.generate_dh_async(key_size=4096)

Arguments follow pyca/cryptography's names (`key_size`, `public_exponent`,
`generator`); everything after `key_size` is keyword-only, and the
blocking, background (`start_*`) and asyncio (`*_async`) functions take
the same keywords.

The library is found through $PRIMEFORGE_LIB, then inside this package
(the wheel built by `pip install ./bindings/python` carries it), then the
system's library path (libprimeforge.so.0.2, the SONAME of this release).
Failures raise primeforge.Error (a subclass per status, carrying the
library's message); arguments of the wrong type raise TypeError and
out-of-range numbers InvalidArgument (a ValueError) before the library
is called. A progress callback returning True cancels (Cancelled); Ctrl-C
during a generation cancels it and raises KeyboardInterrupt.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import glob
import importlib
import os
import signal
import threading
import types
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple, Type, Union

BytesLike = Union[bytes, bytearray, memoryview]
Password = Union[str, bytes, bytearray, memoryview]
ProgressCallback = Callable[["Progress"], Optional[bool]]

__all__ = [
    "Error", "NullArgument", "InvalidArgument", "BufferTooSmall", "Cancelled",
    "NoMemory", "ThreadsError", "EntropyError", "InternalError", "Unsupported",
    "DecodeError", "CheckFailed", "Forked", "WrongKind", "AlreadyTaken",
    "PassphraseError", "SecureMemoryError", "Pending",
    "RsaKey", "DhParams", "DhBatch", "Job", "Progress",
    "generate_rsa", "generate_dh", "start_rsa", "start_dh",
    "generate_rsa_async", "generate_dh_async",
    "import_rsa", "import_dh", "named_group", "check_dh",
    "generate_fips186", "check_dh_ex", "Fips186Info", "HASHES", "DH_VERIFIED_BITS",
    "version", "build_info", "secure_memory_status", "workers", "release_workers",
    "NAMED_GROUPS", "DH_CHECK_BITS", "RSA_CHECK_BITS", "RSA_CHECK_FIPS_MASK",
    "SECURE_ARENA", "SECURE_FALLBACK",
]


def _load() -> ctypes.CDLL:
    """$PRIMEFORGE_LIB first (tests, a library of your own), then the
    library built into this package (a wheel), then the system's."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates: List[str] = []
    env = os.environ.get("PRIMEFORGE_LIB")
    if env:
        candidates.append(env)
    candidates += sorted(glob.glob(os.path.join(here, "_native*.so")))
    found = ctypes.util.find_library("primeforge")
    if found:
        candidates.append(found)
    candidates.append("libprimeforge.so.0.2")
    last: Optional[OSError] = None
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError as e:  # try the next one
            last = e
    raise ImportError("libprimeforge not found (set PRIMEFORGE_LIB): %s" % last)


_lib = _load()

# The C enumerations' numbers, as include/primeforge.h gives them (a test
# compares every one with the header).
PF_OK = 0
PF_PENDING = 13
PF_FORMAT_PKCS8_PEM = 1
PF_FORMAT_PKCS8_DER = 2
PF_FORMAT_PKCS1_PEM = 3
PF_FORMAT_PKCS1_DER = 4
PF_FORMAT_SPKI_PEM = 5
PF_FORMAT_SPKI_DER = 6
PF_FORMAT_PKCS3_PEM = 9
PF_FORMAT_PKCS3_DER = 10
PF_FORMAT_X942_PEM = 11
PF_FORMAT_X942_DER = 12
PF_FORMAT_DSA_PEM = 13
PF_FORMAT_DSA_DER = 14
PF_FORMAT_OPENSSH = 15
PF_FORMAT_OPENSSH_PUBLIC = 16
PF_KDF_BCRYPT_PBKDF = 3
PF_HASH_SHA1 = 1
PF_HASH_SHA224 = 2
PF_HASH_SHA256 = 3
PF_HASH_SHA384 = 4
PF_HASH_SHA512 = 5
PF_HASH_SHA512_224 = 6
PF_HASH_SHA512_256 = 7
PF_DH_VERIFIED_SEED = 1
PF_DH_VERIFIED_SEED_FIPS186_2 = 2
PF_DH_VERIFIED_G_CANONICAL = 4
PF_DH_VERIFIED_G_ORDER = 8
PF_RSA_FIPS = 1
PF_RSA_PROVABLE = 2
PF_RSA_SECURE_ARENA = 4
PF_DH_FLAG_LEGACY_G2 = 1
PF_DH_FLAG_X942 = 2
PF_KDF_SCRYPT = 1
PF_KDF_PBKDF2_SHA256 = 2
PF_DH_P = 1
PF_DH_Q = 2
PF_DH_G = 3
SECURE_ARENA = 1
SECURE_FALLBACK = 2

_U8P = ctypes.POINTER(ctypes.c_uint8)


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
        ("seed", _U8P),
        ("seed_len", ctypes.c_size_t),
        ("progress", _PROGRESS_FN),
        ("user_data", ctypes.c_void_p),
        ("stats", ctypes.POINTER(_Stats)),
        ("flags", ctypes.c_uint32),
    ]


class _Opaque(ctypes.Structure):
    pass


_H = ctypes.POINTER(_Opaque)
_HP = ctypes.POINTER(_H)
_ST = ctypes.c_uint32
_U32 = ctypes.c_uint32
_U64 = ctypes.c_uint64
_SIZE = ctypes.c_size_t
_OPTS = ctypes.POINTER(_Options)


def _fn(name: str, restype: Any, *argtypes: Any) -> Any:
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_pf_status_str = _fn("pf_status_str", ctypes.c_char_p, _U32)
_pf_version = _fn("pf_version", ctypes.c_char_p)
_pf_build_info = _fn("pf_build_info", ctypes.c_char_p)
_pf_last_error_message = _fn("pf_last_error_message", ctypes.c_char_p)
_pf_secure_memory_status = _fn("pf_secure_memory_status", _ST, ctypes.POINTER(_U32))
_pf_options_default = _fn("pf_options_default", _Options)
_pf_workers_count = _fn("pf_workers_count", _ST, ctypes.POINTER(_U32), ctypes.POINTER(_U32))
_pf_workers_release = _fn("pf_workers_release", _ST)
_pf_buffer_data = _fn("pf_buffer_data", _U8P, _H)
_pf_buffer_len = _fn("pf_buffer_len", _SIZE, _H)
_pf_buffer_free = _fn("pf_buffer_free", None, _H)
_pf_buffer_copy = _fn("pf_buffer_copy", _ST, _U8P, _SIZE, ctypes.POINTER(_H))
_pf_rsa_generate_ex = _fn("pf_rsa_generate_ex", _ST, _U32, _U64, _U32, _OPTS, _HP)
_pf_rsa_export = _fn("pf_rsa_export", _ST, _H, _U32, _HP)
_pf_rsa_component = _fn("pf_rsa_component", _ST, _H, _U32, _HP)
_pf_rsa_bits = _fn("pf_rsa_bits", _U32, _H)
_pf_rsa_primes = _fn("pf_rsa_primes", _U32, _H)
_pf_rsa_free = _fn("pf_rsa_free", None, _H)
_pf_dh_generate_ex = _fn("pf_dh_generate_ex", _ST, _U32, _U32, _U32, _OPTS, _HP)
_pf_dh_named = _fn("pf_dh_named", _ST, _U32, _HP)
_pf_dh_export = _fn("pf_dh_export", _ST, _H, _U32, _HP)
_pf_dh_component = _fn("pf_dh_component", _ST, _H, _U32, _HP)
_pf_dh_bits = _fn("pf_dh_bits", _U32, _H)
_pf_dh_free = _fn("pf_dh_free", None, _H)
_pf_rsa_generate_start = _fn("pf_rsa_generate_start", _ST, _U32, _U64, _U32, _OPTS, _HP)
_pf_dh_generate_start = _fn("pf_dh_generate_start", _ST, _U32, _U32, _U32, _OPTS, _HP)
_pf_job_fd = _fn("pf_job_fd", ctypes.c_int32, _H)
_pf_job_poll = _fn("pf_job_poll", _ST, _H, ctypes.POINTER(_Progress))
_pf_job_wait = _fn("pf_job_wait", _ST, _H, _U64)
_pf_job_cancel = _fn("pf_job_cancel", _ST, _H)
_pf_job_take_rsa = _fn("pf_job_take_rsa", _ST, _H, _HP)
_pf_job_take_dh = _fn("pf_job_take_dh", _ST, _H, _HP)
_pf_job_free = _fn("pf_job_free", None, _H)
_pf_rsa_import = _fn("pf_rsa_import", _ST, _U8P, _SIZE, _U8P, _SIZE, _HP)
_pf_rsa_check = _fn("pf_rsa_check", _ST, _H, ctypes.POINTER(_U32))
_pf_rsa_export_encrypted = _fn("pf_rsa_export_encrypted", _ST, _H, _U32, _U8P, _SIZE, _U32, _HP)
_pf_dh_import = _fn("pf_dh_import", _ST, _U8P, _SIZE, _HP)
_pf_dh_check = _fn("pf_dh_check", _ST, _U8P, _SIZE, ctypes.POINTER(_U32))
_pf_dh_batch_new = _fn("pf_dh_batch_new", _ST, _U32, _U32, _U32, _U32, _OPTS, _HP)
_pf_dh_batch_next = _fn("pf_dh_batch_next", _ST, _H, _OPTS, _HP)
_pf_dh_batch_free = _fn("pf_dh_batch_free", None, _H)


class _Fips186(ctypes.Structure):
    _fields_ = [("struct_size", _U32), ("pbits", _U32), ("qbits", _U32), ("hash", _U32),
                ("gindex", ctypes.c_int32), ("seed", _U8P), ("seed_len", _SIZE)]


_pf_rsa_export_openssh = _fn("pf_rsa_export_openssh", _ST, _H, ctypes.c_char_p, _U8P, _SIZE,
                             _U32, _HP)
_pf_dh_fips186_default = _fn("pf_dh_fips186_default", _Fips186, _U32)
_pf_dh_generate_fips186 = _fn("pf_dh_generate_fips186", _ST, ctypes.POINTER(_Fips186), _OPTS, _HP)
_pf_dh_fips186_info = _fn("pf_dh_fips186_info", _ST, _H, _HP, ctypes.POINTER(_U32),
                          ctypes.POINTER(_U32), ctypes.POINTER(ctypes.c_int32))
_pf_dh_check_ex = _fn("pf_dh_check_ex", _ST, _U8P, _SIZE, ctypes.POINTER(_U32),
                      ctypes.POINTER(_U32))

# FIPS 186-4 hashes: pyca's names (hashes.SHA256.name) and the pf_hash values.
HASHES = {"sha1": PF_HASH_SHA1, "sha224": PF_HASH_SHA224, "sha256": PF_HASH_SHA256,
          "sha384": PF_HASH_SHA384, "sha512": PF_HASH_SHA512,
          "sha512-224": PF_HASH_SHA512_224, "sha512-256": PF_HASH_SHA512_256}


class Error(Exception):
    """A primeforge call failed; .status is the pf_status code, the message
    what the library said (pf_last_error_message), e.g. "invalid argument:
    bits must be even, 512..=16384"."""

    status: int

    def __init__(self, status: int, message: Optional[str] = None) -> None:
        self.status = status
        if message is None:
            message = bytes(_pf_status_str(status)).decode()
        super().__init__(message)


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
class Pending(Error): pass
class WrongKind(Error, TypeError): pass
class AlreadyTaken(Error): pass
class PassphraseError(Error, ValueError): pass
class SecureMemoryError(Error): pass


_ERRORS: Dict[int, Type[Error]] = {
    1: NullArgument, 2: InvalidArgument, 3: BufferTooSmall, 4: Cancelled,
    5: NoMemory, 6: ThreadsError, 7: EntropyError, 8: InternalError,
    9: Unsupported, 10: DecodeError, 11: CheckFailed, 12: Forked,
    13: Pending, 14: WrongKind, 15: AlreadyTaken, 16: PassphraseError,
    17: SecureMemoryError,
}


def _check(status: int) -> None:
    """Raises the Error subclass for a failed call's status, with the
    library's message (read on this thread right after the call: ctypes
    calls run on the calling OS thread)."""
    if status != PF_OK:
        message = bytes(_pf_last_error_message()).decode(errors="replace")
        raise _ERRORS.get(status, Error)(status, message)


def _invalid(message: str) -> InvalidArgument:
    return InvalidArgument(2, "invalid argument: " + message)


def _uint(name: str, value: object, bits: int) -> int:
    """`value` as a C unsigned integer of `bits` bits: TypeError for a
    non-integer (bool included), InvalidArgument when out of range (ctypes
    would silently truncate it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    if not 0 <= value < 1 << bits:
        raise _invalid("%s must be 0 to 2^%d - 1, not %d" % (name, bits, value))
    return value


def _bytes(name: str, value: object) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be bytes-like, not %s" % (name, type(value).__name__))


def _password(value: object) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return _bytes("password", value)


def _callable(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError("%s must be callable or None, not %s" % (name, type(value).__name__))


class _CBytes:
    """Bytes moved into the library's secure memory for one call by
    pf_buffer_copy, which reads them with signals blocked and clears the
    registers after (a copy made here would leave them in registers that
    the next signal handler's frame receives); freed, and so wiped, when
    released. The Python object the caller passed is the caller's to
    manage."""

    def __init__(self, data: bytes) -> None:
        self.len = len(data)
        self._buf = _H()
        _check(_pf_buffer_copy(ctypes.cast(ctypes.c_char_p(data), _U8P), self.len,
                               ctypes.byref(self._buf)))
        self.ptr = _pf_buffer_data(self._buf)

    def wipe(self) -> None:
        buf = getattr(self, "_buf", None)
        if buf:
            self._buf = _H()
            self.ptr = _U8P()
            _pf_buffer_free(buf)

    def __del__(self) -> None:
        self.wipe()

    def __enter__(self) -> "_CBytes":
        return self

    def __exit__(self, *exc: object) -> None:
        self.wipe()


def version() -> str:
    """The library version, e.g. '0.2.0'."""
    return bytes(_pf_version()).decode()


def build_info() -> str:
    """What a bug report needs: version, commit, GMP version, arithmetic
    path (e.g. "primeforge 0.2.0 (commit ...), GMP 6.3.0, arithmetic
    BMI2/ADX, GMP dispatch amd")."""
    return bytes(_pf_build_info()).decode()


def secure_memory_status() -> int:
    """SECURE_ARENA: secret limbs live in the fork-wiped, undumpable arena
    in this process; SECURE_FALLBACK: some went to the ordinary heap."""
    out = _U32()
    _check(_pf_secure_memory_status(ctypes.byref(out)))
    return int(out.value)


def workers() -> Tuple[int, int]:
    """(busy, parked): the library's worker threads running generations
    now, and those parked for the next generation of the same size
    (holding nothing of the ones they ran; joined after 2 s unused)."""
    busy, idle = _U32(), _U32()
    _check(_pf_workers_count(ctypes.byref(busy), ctypes.byref(idle)))
    return int(busy.value), int(idle.value)


def release_workers() -> None:
    """Joins every parked worker thread now (before a fork without exec,
    or entering a sandbox); generations still running keep theirs."""
    _check(_pf_workers_release())


class Progress:
    """A progress event: counters, elapsed seconds, primes found/needed."""

    __slots__ = ("candidates", "survivors", "exponentiations", "elapsed",
                 "primes_found", "primes_needed")

    def __init__(self, ev: _Progress) -> None:
        self.candidates = int(ev.candidates)
        self.survivors = int(ev.survivors)
        self.exponentiations = int(ev.exponentiations)
        self.elapsed = int(ev.elapsed_ns) / 1e9
        self.primes_found = int(ev.primes_found)
        self.primes_needed = int(ev.primes_needed)


def _take(buf: Any) -> bytes:
    """Copies a pf_buffer's bytes and frees it. (The copy is an ordinary
    Python bytes object: secrets you export leave secure memory here.)"""
    try:
        n = int(_pf_buffer_len(buf))
        return ctypes.string_at(_pf_buffer_data(buf), n) if n else b""
    finally:
        _pf_buffer_free(buf)


class _Call:
    """Options for one generation: seed, threads, flags, the progress
    callback, Ctrl-C, and the work counters."""

    def __init__(self, threads: int, seed: Optional[BytesLike],
                 progress: Optional[ProgressCallback], flags: int = 0) -> None:
        _callable("progress", progress)
        self.opts = _pf_options_default()
        self.opts.threads = _uint("threads", threads, 32)
        self.opts.flags = flags
        self.stats = _Stats()
        self.opts.stats = ctypes.pointer(self.stats)
        self._seed: Optional[_CBytes] = None
        if seed is not None:
            # Any length is passed on; the library insists on 32 bytes and
            # says so.
            self._seed = _CBytes(_bytes("seed", seed))
            self.opts.seed = self._seed.ptr
            self.opts.seed_len = self._seed.len
        self.user_cb = progress
        self.interrupted = False
        self.error: Optional[BaseException] = None
        # Always install a callback: it runs on the calling thread every
        # ~50 ms, which is where Python can notice Ctrl-C.
        self._cb = _PROGRESS_FN(self._on_progress)
        self.opts.progress = self._cb

    def _on_progress(self, _user: Any, ev: Any) -> int:
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

    def _on_sigint(self, _signum: int, _frame: Optional[types.FrameType]) -> None:
        # Runs (in Python) the next time the progress callback executes:
        # note it, and the callback cancels the generation.
        self.interrupted = True

    def run(self, fn: Any, *args: Any) -> None:
        """Calls fn(*args) with Ctrl-C turned into a cancel, then raises
        what the call, the callback or Ctrl-C ended with."""
        previous: Any = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            status = int(fn(*args))
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            if self._seed is not None:
                self._seed.wipe()
        if self.interrupted:
            raise KeyboardInterrupt
        if self.error is not None:
            raise self.error
        _check(status)

    def counters(self) -> Dict[str, float]:
        s = self.stats
        return {"candidates": int(s.candidates), "survivors": int(s.survivors),
                "exponentiations": int(s.exponentiations), "elapsed": int(s.elapsed_ns) / 1e9}


_RSA_PARTS = {"n": 1, "e": 2, "d": 3, "p": 4, "q": 5, "dp": 6, "dq": 7, "qinv": 8}


class _Owned:
    """A library handle owned by a Python object: freed (and wiped by the
    library) by close(), at the end of a `with` block, or when collected."""

    _what = "object"
    _h: Any = None

    def _free(self, handle: Any) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Frees the handle now (also done when collected)."""
        h, self._h = self._h, None
        if h:
            self._free(h)

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handle(self) -> Any:
        if not self._h:
            raise ValueError("%s is closed" % self._what)
        return self._h


def _serialization() -> Any:
    """pyca/cryptography's serialization module (an optional dependency,
    imported only when asked for, and typed as Any so that the package
    type-checks with or without it)."""
    return importlib.import_module("cryptography.hazmat.primitives.serialization")


class RsaKey(_Owned):
    """An RSA private key held in primeforge's secure memory."""

    _what = "key"

    def _free(self, handle: Any) -> None:
        _pf_rsa_free(handle)

    def __init__(self, handle: Any, stats: Optional[Dict[str, float]] = None) -> None:
        self._h = handle
        self.stats: Dict[str, float] = stats or {}

    def __enter__(self) -> "RsaKey":
        return self

    def _export(self, fmt: int) -> bytes:
        out = _H()
        _check(_pf_rsa_export(self._handle(), fmt, ctypes.byref(out)))
        return _take(out)

    def pem(self, pkcs1: bool = False) -> bytes:
        """Private key as PEM: PKCS#8 ("PRIVATE KEY") or PKCS#1."""
        return self._export(PF_FORMAT_PKCS1_PEM if pkcs1 else PF_FORMAT_PKCS8_PEM)

    def der(self, pkcs1: bool = False) -> bytes:
        return self._export(PF_FORMAT_PKCS1_DER if pkcs1 else PF_FORMAT_PKCS8_DER)

    def public_pem(self) -> bytes:
        """SubjectPublicKeyInfo ("PUBLIC KEY")."""
        return self._export(PF_FORMAT_SPKI_PEM)

    def public_der(self) -> bytes:
        return self._export(PF_FORMAT_SPKI_DER)

    def _part(self, name: str) -> int:
        out = _H()
        _check(_pf_rsa_component(self._handle(), _RSA_PARTS[name], ctypes.byref(out)))
        return int.from_bytes(_take(out), "big")

    @property
    def n(self) -> int:
        return self._part("n")

    @property
    def e(self) -> int:
        return self._part("e")

    @property
    def public_exponent(self) -> int:
        """e, by pyca's name."""
        return self._part("e")

    @property
    def d(self) -> int:
        return self._part("d")

    @property
    def p(self) -> int:
        return self._part("p")

    @property
    def q(self) -> int:
        return self._part("q")

    @property
    def dp(self) -> int:
        return self._part("dp")

    @property
    def dq(self) -> int:
        return self._part("dq")

    @property
    def qinv(self) -> int:
        return self._part("qinv")

    def check(self) -> int:
        """Problem bits (0: consistent and FIPS 186-5): see RSA_CHECK_BITS;
        bits in RSA_CHECK_FIPS_MASK only say the key is not FIPS 186-5."""
        problems = _U32()
        _check(_pf_rsa_check(self._handle(), ctypes.byref(problems)))
        return int(problems.value)

    def pem_encrypted(self, password: Password, kdf: str = "scrypt") -> bytes:
        """PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2, AES-256-CBC) under
        `password` (bytes or str); kdf "scrypt" or "pbkdf2"."""
        return self._encrypted(PF_FORMAT_PKCS8_PEM, password, kdf)

    def der_encrypted(self, password: Password, kdf: str = "scrypt") -> bytes:
        return self._encrypted(PF_FORMAT_PKCS8_DER, password, kdf)

    def _encrypted(self, fmt: int, password: Password, kdf: str) -> bytes:
        kdfs = {"scrypt": PF_KDF_SCRYPT, "pbkdf2": PF_KDF_PBKDF2_SHA256}
        if kdf not in kdfs:
            raise _invalid("kdf must be 'scrypt' or 'pbkdf2', not %r" % (kdf,))
        out = _H()
        with _CBytes(_password(password)) as pw:
            _check(_pf_rsa_export_encrypted(self._handle(), fmt, pw.ptr, pw.len, kdfs[kdf],
                                            ctypes.byref(out)))
        return _take(out)

    def openssh(self, comment: str = "", password: Optional[Password] = None) -> bytes:
        """The key as `ssh-keygen -t rsa` writes it ("OPENSSH PRIVATE KEY"),
        with `comment`, encrypted under `password` as ssh-keygen encrypts
        (bcrypt-pbkdf, AES-256-CTR) when one is given."""
        if not isinstance(comment, str):
            raise TypeError("comment must be a str, not %s" % type(comment).__name__)
        out = _H()
        if password is None:
            _check(_pf_rsa_export_openssh(self._handle(), comment.encode(), None, 0, 0,
                                          ctypes.byref(out)))
        else:
            with _CBytes(_password(password)) as pw:
                _check(_pf_rsa_export_openssh(self._handle(), comment.encode(), pw.ptr, pw.len,
                                              0, ctypes.byref(out)))
        return _take(out)

    def openssh_public(self, comment: str = "") -> bytes:
        """The `ssh-rsa AAAA... comment` line for authorized_keys."""
        if not isinstance(comment, str):
            raise TypeError("comment must be a str, not %s" % type(comment).__name__)
        out = _H()
        _check(_pf_rsa_export_openssh(self._handle(), comment.encode(), None, 0, 1,
                                      ctypes.byref(out)))
        return _take(out)

    def to_cryptography(self) -> Any:
        """The key as a pyca/cryptography RSAPrivateKey (needs the
        `cryptography` package: `pip install cryptography`, or install
        this package with its `cryptography` extra). The copy lives in
        OpenSSL's memory, outside primeforge's."""
        return _serialization().load_der_private_key(self.der(), password=None)

    @property
    def bits(self) -> int:
        return int(_pf_rsa_bits(self._handle()))

    @property
    def key_size(self) -> int:
        """The modulus size in bits, by pyca's name."""
        return self.bits

    @property
    def primes(self) -> int:
        return int(_pf_rsa_primes(self._handle()))


class Fips186Info(NamedTuple):
    """What makes FIPS 186-4 parameters verifiable (DhParams.fips186)."""
    seed: bytes
    counter: int
    hash: Optional[str]
    gindex: Optional[int]


class DhParams(_Owned):
    """Diffie-Hellman parameters (public values)."""

    _what = "parameters"

    def _free(self, handle: Any) -> None:
        _pf_dh_free(handle)

    def __init__(self, handle: Any, stats: Optional[Dict[str, float]] = None) -> None:
        self._h = handle
        self.stats: Dict[str, float] = stats or {}

    def __enter__(self) -> "DhParams":
        return self

    def _export(self, fmt: int) -> bytes:
        out = _H()
        _check(_pf_dh_export(self._handle(), fmt, ctypes.byref(out)))
        return _take(out)

    def pem(self, x942: bool = False) -> bytes:
        """PKCS#3 "DH PARAMETERS" (or X9.42 with q)."""
        return self._export(PF_FORMAT_X942_PEM if x942 else PF_FORMAT_PKCS3_PEM)

    def der(self, x942: bool = False) -> bytes:
        return self._export(PF_FORMAT_X942_DER if x942 else PF_FORMAT_PKCS3_DER)

    def _part(self, part: int) -> int:
        out = _H()
        _check(_pf_dh_component(self._handle(), part, ctypes.byref(out)))
        return int.from_bytes(_take(out), "big")

    @property
    def p(self) -> int:
        return self._part(PF_DH_P)

    @property
    def q(self) -> int:
        return self._part(PF_DH_Q)

    @property
    def g(self) -> int:
        return self._part(PF_DH_G)

    def dsa_pem(self) -> bytes:
        """DSA "DSA PARAMETERS" (p, q, g), for FIPS 186-4 parameters; the
        format has no place for the seed (see fips186)."""
        return self._export(PF_FORMAT_DSA_PEM)

    def dsa_der(self) -> bytes:
        return self._export(PF_FORMAT_DSA_DER)

    @property
    def fips186(self) -> Optional[Fips186Info]:
        """What makes FIPS 186-4 parameters verifiable (seed, counter,
        hash, canonical generator index), or None for parameters without a
        seed. hash is None for parameters read from a file (no format
        names it); gindex None when g is not canonical or not known."""
        seed = _H()
        counter, hash_, gindex = _U32(), _U32(), ctypes.c_int32()
        st = _pf_dh_fips186_info(self._handle(), ctypes.byref(seed), ctypes.byref(counter),
                                 ctypes.byref(hash_), ctypes.byref(gindex))
        if st == 9:  # PF_ERR_UNSUPPORTED: no seed
            return None
        _check(st)
        names = {v: k for k, v in HASHES.items()}
        return Fips186Info(_take(seed), int(counter.value), names.get(int(hash_.value)),
                           None if gindex.value < 0 else int(gindex.value))

    def to_cryptography(self) -> Any:
        """The parameters as pyca/cryptography DHParameters (needs the
        `cryptography` package); FIPS 186-4 parameters keep their q."""
        if self.fips186 is not None:
            dh = importlib.import_module("cryptography.hazmat.primitives.asymmetric.dh")
            return dh.DHParameterNumbers(self.p, self.g, self.q).parameters()
        return _serialization().load_der_parameters(self.der())

    @property
    def bits(self) -> int:
        return int(_pf_dh_bits(self._handle()))

    @property
    def key_size(self) -> int:
        """The size of p in bits, by pyca's name."""
        return self.bits


def _rsa_flags(fips: bool, provable: bool) -> int:
    return (PF_RSA_FIPS if fips else 0) | (PF_RSA_PROVABLE if provable else 0)


def _dh_flags(legacy: bool) -> int:
    return PF_DH_FLAG_LEGACY_G2 if legacy else 0


def generate_rsa(key_size: int = 3072, *, public_exponent: int = 65537, primes: int = 2,
                 threads: int = 0, seed: Optional[BytesLike] = None,
                 progress: Optional[ProgressCallback] = None, fips: bool = False,
                 provable: bool = False) -> RsaKey:
    """Generates an RSA key by FIPS 186-5 A.1.3 on `threads` threads (0 = all
    cores). The key meets FIPS 186-5 when key_size >= 2048,
    public_exponent > 65536 and primes == 2; `fips=True` raises
    InvalidArgument for anything else. `provable=True` makes proven primes
    (Pocklington certificates, as nettle does) instead of probable ones;
    not with `fips=True`.

    `seed` (32 bytes, not all zero) makes the key a deterministic function
    of the seed. `progress(ev)` is called on this thread every 50 ms and
    whenever a prime is found; returning True cancels (raises Cancelled).
    """
    call = _Call(threads, seed, progress, _rsa_flags(fips, provable))
    out = _H()
    call.run(_pf_rsa_generate_ex, _uint("key_size", key_size, 32),
             _uint("public_exponent", public_exponent, 64), _uint("primes", primes, 32),
             ctypes.byref(call.opts), ctypes.byref(out))
    return RsaKey(out, call.counters())


def generate_dh(key_size: int = 2048, *, generator: int = 2, threads: int = 0,
                legacy: bool = False, seed: Optional[BytesLike] = None,
                progress: Optional[ProgressCallback] = None) -> DhParams:
    """Generates DH parameters: a safe prime p of `key_size` bits for
    `generator` (p = 2q + 1 with q prime; g = 2 gives p = 23 mod 24, as
    OpenSSL 3; `legacy=True` gives p = 11 mod 24, as OpenSSL 1.1).
    `threads`, `seed` and `progress` as for generate_rsa."""
    call = _Call(threads, seed, progress)
    out = _H()
    call.run(_pf_dh_generate_ex, _uint("key_size", key_size, 32),
             _uint("generator", generator, 32), _dh_flags(legacy), ctypes.byref(call.opts),
             ctypes.byref(out))
    return DhParams(out, call.counters())


def generate_fips186(key_size: int = 2048, *, q_size: int = 0, hash: Optional[str] = None,
                     gindex: Optional[int] = 1, threads: int = 0,
                     seed: Optional[BytesLike] = None, domain_seed: Optional[BytesLike] = None,
                     progress: Optional[ProgressCallback] = None) -> DhParams:
    """FIPS 186-4 domain parameters (DSA, X9.42 DH): p of `key_size` bits
    (1024, 2048, 3072) and q of `q_size` bits (0: 160, 224, 256 as
    OpenSSL) derived from a domain parameter seed by A.1.1.2 with `hash`
    (a key of HASHES; None: sha224 for q of 224 bits, else sha256); g the
    canonical generator of `gindex` (A.2.3), or with gindex=None
    h^((p-1)/q) for the smallest h (A.2.1). The counters are tested on
    `threads` threads; with a 32-byte `seed` the result is the same at any
    thread count. `domain_seed` runs A.1.1.2 from that seed only. Export
    with pem(x942=True) (seed and counter inside) or dsa_pem()."""
    if hash is not None and hash not in HASHES:
        raise _invalid("unknown hash %r (known: %s)" % (hash, ", ".join(HASHES)))
    if gindex is not None and (not isinstance(gindex, int) or isinstance(gindex, bool)
                               or not 0 <= gindex <= 255):
        raise _invalid("gindex must be 0 to 255, or None for A.2.1's generator")
    req = _pf_dh_fips186_default(_uint("key_size", key_size, 32))
    req.qbits = _uint("q_size", q_size, 32)
    req.hash = HASHES[hash] if hash is not None else 0
    req.gindex = -1 if gindex is None else gindex
    call = _Call(threads, seed, progress)
    out = _H()
    with _CBytes(_bytes("domain_seed", domain_seed) if domain_seed is not None else b"") as d:
        if domain_seed is not None:
            req.seed, req.seed_len = d.ptr, d.len
        call.run(_pf_dh_generate_fips186, ctypes.byref(req), ctypes.byref(call.opts),
                 ctypes.byref(out))
    return DhParams(out, call.counters())


class DhBatch(_Owned):
    """Many DH parameter sets of one size from one sieve: the consecutive
    safe primes above one random start (pf_dh_batch_*). The sieve is set
    up once and deeper than a single generate_dh can afford, so each prime
    costs less. `expected` (1 to 4096) sizes the sieve; more may be taken.
    With a 32-byte `seed` the sequence is deterministic at any thread
    count. Each next() is one search with its own threads and progress;
    after a cancel the batch is where it was.

        with DhBatch(key_size=2048, expected=8) as batch:
            pool = [batch.next(threads=0) for _ in range(8)]
    """

    _what = "batch"

    def _free(self, handle: Any) -> None:
        _pf_dh_batch_free(handle)

    def __init__(self, key_size: int = 2048, *, generator: int = 2, expected: int = 16,
                 legacy: bool = False, seed: Optional[BytesLike] = None) -> None:
        call = _Call(0, seed, None)
        out = _H()
        call.run(_pf_dh_batch_new, _uint("key_size", key_size, 32),
                 _uint("generator", generator, 32), _dh_flags(legacy),
                 _uint("expected", expected, 32), ctypes.byref(call.opts), ctypes.byref(out))
        self._h = out

    def __enter__(self) -> "DhBatch":
        return self

    def next(self, *, threads: int = 0,
             progress: Optional[ProgressCallback] = None) -> DhParams:
        """The batch's next safe prime, as DhParams (Ctrl-C and a progress
        callback returning True cancel, as for generate_dh)."""
        call = _Call(threads, None, progress)
        out = _H()
        call.run(_pf_dh_batch_next, self._handle(), ctypes.byref(call.opts), ctypes.byref(out))
        return DhParams(out, call.counters())


NAMED_GROUPS = {"ffdhe2048": 1, "ffdhe3072": 2, "ffdhe4096": 3, "ffdhe6144": 4,
                "ffdhe8192": 5, "modp2048": 6, "modp3072": 7, "modp4096": 8,
                "modp6144": 9, "modp8192": 10}

DH_CHECK_BITS = {0x01: "p not prime", 0x02: "p not a safe prime",
                 0x08: "unsuitable generator", 0x10: "q not prime",
                 0x20: "q does not divide p - 1", 0x40: "j is not (p - 1)/q",
                 0x80: "modulus too small", 0x100: "modulus too large",
                 0x10000: "q under 160 bits",
                 0x20000: "the FIPS 186-4 seed and counter do not give p and q"}

DH_VERIFIED_BITS = {PF_DH_VERIFIED_SEED: "p and q from the seed and counter (FIPS 186-4 A.1.1.3)",
                    PF_DH_VERIFIED_SEED_FIPS186_2: "p and q from the seed and counter (FIPS 186-2, as OpenSSL)",
                    PF_DH_VERIFIED_G_CANONICAL: "g canonical from the seed (A.2.4)",
                    PF_DH_VERIFIED_G_ORDER: "g of order q (A.2.2)"}


def named_group(name: str) -> DhParams:
    """An RFC 7919 (ffdhe*) or RFC 3526 (modp*) group: instant."""
    if not isinstance(name, str):
        raise TypeError("name must be a str, not %s" % type(name).__name__)
    gid = NAMED_GROUPS.get(name.lower().replace("_", ""))
    if gid is None:
        raise _invalid("unknown group %r (known: %s)" % (name, ", ".join(NAMED_GROUPS)))
    out = _H()
    _check(_pf_dh_named(gid, ctypes.byref(out)))
    return DhParams(out)


def check_dh(data: BytesLike) -> int:
    """Problem bits for encoded DH parameters (PEM or DER, PKCS#3 or X9.42):
    0 when nothing is wrong; see DH_CHECK_BITS. Malformed: DecodeError."""
    problems = _U32()
    with _CBytes(_bytes("data", data)) as d:
        _check(_pf_dh_check(d.ptr, d.len, ctypes.byref(problems)))
    return int(problems.value)


def check_dh_ex(data: BytesLike) -> Tuple[int, int]:
    """check_dh, with what was verified: (problem bits, verified bits; see
    DH_VERIFIED_BITS)."""
    problems, verified = _U32(), _U32()
    with _CBytes(_bytes("data", data)) as d:
        _check(_pf_dh_check_ex(d.ptr, d.len, ctypes.byref(problems), ctypes.byref(verified)))
    return int(problems.value), int(verified.value)


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

    _what = "job"

    def __init__(self, handle: Any, kind: str) -> None:
        self._h = handle
        self._kind = kind

    def _free(self, handle: Any) -> None:
        _pf_job_free(handle)

    def __enter__(self) -> "Job":
        return self

    def fileno(self) -> int:
        """The descriptor that becomes readable when the job ends. Owned by
        the job: never read it or close it."""
        fd = int(_pf_job_fd(self._handle()))
        if fd < 0:
            raise Forked(12)
        return fd

    def poll(self) -> Tuple[bool, Progress]:
        """(done, Progress) without waiting. done is True once the job has
        ended, successfully or not (result() then returns or raises)."""
        ev = _Progress()
        st = int(_pf_job_poll(self._handle(), ctypes.byref(ev)))
        if st == 12:
            raise Forked(12)
        return st != PF_PENDING, Progress(ev)

    def done(self) -> bool:
        return self.poll()[0]

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the job ends or `timeout` seconds pass; returns
        whether it has ended."""
        ms = 2 ** 64 - 1 if timeout is None else min(max(0, int(timeout * 1000)), 2 ** 64 - 2)
        st = int(_pf_job_wait(self._handle(), ms))
        if st == 12:
            raise Forked(12)
        return st != PF_PENDING

    def cancel(self) -> None:
        """Asks the job to stop; returns at once."""
        _check(_pf_job_cancel(self._handle()))

    def _take_result(self, fn: Any) -> Tuple[Any, Dict[str, float]]:
        out = _H()
        _check(fn(self._handle(), ctypes.byref(out)))
        _, p = self.poll()
        counters: Dict[str, float] = {
            "candidates": p.candidates, "survivors": p.survivors,
            "exponentiations": p.exponentiations, "elapsed": p.elapsed}
        return out, counters

    def result(self) -> Union[RsaKey, DhParams]:
        """The RsaKey or DhParams, once the job has ended: raises the job's
        error (Cancelled, ...), AlreadyTaken, or Pending while it still
        runs."""
        if self._kind == "rsa":
            return RsaKey(*self._take_result(_pf_job_take_rsa))
        return DhParams(*self._take_result(_pf_job_take_dh))


def _job_options(threads: int, seed: Optional[BytesLike],
                 flags: int = 0) -> Tuple[Any, Optional[_CBytes]]:
    opts = _pf_options_default()
    opts.threads = _uint("threads", threads, 32)
    keep = None
    if seed is not None:
        keep = _CBytes(_bytes("seed", seed))
        opts.seed = keep.ptr
        opts.seed_len = keep.len
    opts.flags = flags
    # The library copies the options and the seed before start returns.
    return opts, keep


def _start(fn: Any, kind: str, threads: int, seed: Optional[BytesLike], flags: int,
           *args: int) -> Job:
    opts, keep = _job_options(threads, seed, flags)
    out = _H()
    try:
        _check(fn(*args, ctypes.byref(opts), ctypes.byref(out)))
    finally:
        if keep is not None:
            keep.wipe()
    return Job(out, kind)


def start_rsa(key_size: int = 3072, *, public_exponent: int = 65537, primes: int = 2,
              threads: int = 0, seed: Optional[BytesLike] = None, fips: bool = False,
              provable: bool = False) -> Job:
    """Starts generate_rsa's work in the background and returns a Job
    (same keywords, without progress: poll the job)."""
    return _start(_pf_rsa_generate_start, "rsa", threads, seed, _rsa_flags(fips, provable),
                  _uint("key_size", key_size, 32),
                  _uint("public_exponent", public_exponent, 64), _uint("primes", primes, 32))


def start_dh(key_size: int = 2048, *, generator: int = 2, threads: int = 0,
             legacy: bool = False, seed: Optional[BytesLike] = None) -> Job:
    """Starts generate_dh's work in the background and returns a Job."""
    return _start(_pf_dh_generate_start, "dh", threads, seed, 0,
                  _uint("key_size", key_size, 32), _uint("generator", generator, 32),
                  _dh_flags(legacy))


async def _await_job(job: Job, progress: Optional[ProgressCallback], interval: float) -> Any:
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    fd = job.fileno()

    def on_readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(fd, on_readable)
    ticker: Optional[asyncio.TimerHandle] = None

    def tick() -> None:
        nonlocal ticker
        done, ev = job.poll()
        if done or progress is None:
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


async def generate_rsa_async(key_size: int = 3072, *, public_exponent: int = 65537,
                             primes: int = 2, threads: int = 0,
                             seed: Optional[BytesLike] = None,
                             progress: Optional[ProgressCallback] = None, fips: bool = False,
                             provable: bool = False, interval: float = 0.1) -> RsaKey:
    """generate_rsa for asyncio, with the same keywords: the event loop
    keeps running while the library's threads work, woken by the job's
    descriptor. `progress(ev)` runs on the loop every `interval` seconds;
    returning True cancels (raises Cancelled). Cancelling the awaiting
    task cancels the job."""
    _callable("progress", progress)
    job = start_rsa(key_size, public_exponent=public_exponent, primes=primes, threads=threads,
                    seed=seed, fips=fips, provable=provable)
    key: RsaKey = await _await_job(job, progress, interval)
    return key


async def generate_dh_async(key_size: int = 2048, *, generator: int = 2, threads: int = 0,
                            legacy: bool = False, seed: Optional[BytesLike] = None,
                            progress: Optional[ProgressCallback] = None,
                            interval: float = 0.1) -> DhParams:
    """generate_dh for asyncio (see generate_rsa_async)."""
    _callable("progress", progress)
    job = start_dh(key_size, generator=generator, threads=threads, legacy=legacy, seed=seed)
    params: DhParams = await _await_job(job, progress, interval)
    return params


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


def import_rsa(data: BytesLike, password: Optional[Password] = None) -> RsaKey:
    """Reads an RSA private key (PEM or DER; PKCS#1, PKCS#8, encrypted
    PKCS#8 with `password`, PEM encryption, OpenSSH) into secure memory.
    Raises DecodeError (not a private key, malformed: the message says
    what the input is) or PassphraseError (encrypted: missing or wrong).
    The copies made for the call are wiped; `data` itself is yours."""
    out = _H()
    with _CBytes(_bytes("data", data)) as d:
        if password is None:
            _check(_pf_rsa_import(d.ptr, d.len, None, 0, ctypes.byref(out)))
        else:
            with _CBytes(_password(password)) as pw:
                _check(_pf_rsa_import(d.ptr, d.len, pw.ptr, pw.len, ctypes.byref(out)))
    return RsaKey(out)


def import_dh(data: BytesLike) -> DhParams:
    """Reads DH parameters (PEM or DER, PKCS#3 or X9.42)."""
    out = _H()
    with _CBytes(_bytes("data", data)) as d:
        _check(_pf_dh_import(d.ptr, d.len, ctypes.byref(out)))
    return DhParams(out)

"""Tests for the ctypes binding (run by `cargo test` through tests/python.rs,
or by hand: PRIMEFORGE_LIB=target/release/libprimeforge.so python3 -m
unittest -v test_primeforge)."""

import asyncio
import ctypes
import inspect
import math
import os
import selectors
import signal
import subprocess
import sys
import time
import unittest

import primeforge as pf

try:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
    HAVE_CRYPTOGRAPHY = True
except ImportError:  # optional
    HAVE_CRYPTOGRAPHY = False


class Rsa(unittest.TestCase):
    def test_key_is_consistent_and_loads(self):
        key = pf.generate_rsa(1024, threads=2)
        self.assertEqual(key.bits, 1024)
        self.assertEqual(key.primes, 2)
        n, e, d, p, q = key.n, key.e, key.d, key.p, key.q
        self.assertEqual(n, p * q)
        self.assertEqual(e, 65537)
        lam = (p - 1) * (q - 1) // math.gcd(p - 1, q - 1)
        self.assertEqual(d * e % lam, 1)
        self.assertEqual(key.qinv * q % p, 1)
        self.assertTrue(key.pem().startswith(b"-----BEGIN PRIVATE KEY-----\n"))
        self.assertTrue(key.pem(pkcs1=True).startswith(b"-----BEGIN RSA PRIVATE KEY-----\n"))
        self.assertGreater(key.stats["exponentiations"], 0)
        if HAVE_CRYPTOGRAPHY:
            priv = serialization.load_pem_private_key(key.pem(), password=None)
            pub = serialization.load_der_public_key(key.public_der())
            sig = priv.sign(b"hello", padding.PKCS1v15(), hashes.SHA256())
            pub.verify(sig, b"hello", padding.PKCS1v15(), hashes.SHA256())
            self.assertEqual(priv.private_numbers().p * priv.private_numbers().q, n)
        key.close()
        with self.assertRaises(ValueError):
            key.pem()

    def test_seed_makes_it_deterministic(self):
        seed = bytes(range(32))
        a = pf.generate_rsa(768, threads=1, seed=seed)
        b = pf.generate_rsa(768, threads=2, seed=seed)
        self.assertEqual(a.der(), b.der())
        c = pf.generate_rsa(768, seed=bytes(31) + b"\x01")
        self.assertNotEqual(a.der(), c.der())
        # An all-zero seed is what a kept seed buffer reads as in a fork
        # child: refused.
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(768, seed=bytes(32))

    def test_fips_flag_refuses_non_fips_requests(self):
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(1024, fips=True)
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(2048, public_exponent=3, fips=True)
        key = pf.generate_rsa(2048, threads=2, fips=True)
        self.assertEqual(key.bits, 2048)

    def test_provable_primes(self):
        seed = bytes(range(1, 33))
        one = pf.generate_rsa(512, threads=1, seed=seed, provable=True)
        two = pf.generate_rsa(512, threads=2, seed=seed, provable=True)
        self.assertEqual(one.der(), two.der())
        self.assertEqual(one.check() & 0xFFFF, 0)  # FIPS notes only (512 bits)
        self.assertNotEqual(pf.generate_rsa(512, threads=1, seed=seed).der(), one.der())
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(2048, fips=True, provable=True)

    def test_bad_input_raises(self):
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(1001)
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(1024, public_exponent=4)
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(1024, seed=b"short")
        with self.assertRaises(pf.InvalidArgument):
            pf.generate_rsa(1024, seed=b"")
        try:
            pf.generate_rsa(1024, primes=9)
        except pf.Error as e:
            self.assertEqual(e.status, 2)
            self.assertIn("invalid", str(e))


class Dh(unittest.TestCase):
    def test_generate_and_check(self):
        dh = pf.generate_dh(512, threads=2)
        p, q, g = dh.p, dh.q, dh.g
        self.assertEqual(p, 2 * q + 1)
        self.assertEqual(g, 2)
        self.assertEqual(p % 24, 23)
        self.assertEqual(pf.check_dh(dh.pem()), 0)
        self.assertEqual(pf.check_dh(dh.der(x942=True)), 0)
        if HAVE_CRYPTOGRAPHY:
            params = serialization.load_pem_parameters(dh.pem())
            self.assertEqual(params.parameter_numbers().p, p)

    def test_batch_gives_increasing_safe_primes_deterministically(self):
        seed = bytes([9] * 32)
        with pf.DhBatch(512, expected=3, seed=seed) as batch:
            ps = [batch.next(threads=t).p for t in (1, 2, 1)]
        self.assertTrue(ps[0] < ps[1] < ps[2])
        for p in ps:
            self.assertEqual(p % 24, 23)
        with pf.DhBatch(512, expected=3, seed=seed) as batch:
            with self.assertRaises(pf.Cancelled):
                batch.next(progress=lambda ev: True)
            self.assertEqual([batch.next().p for _ in range(3)], ps)
        self.assertEqual(pf.generate_dh(512, seed=seed, threads=2).p, ps[0])
        with self.assertRaises(pf.InvalidArgument):
            pf.DhBatch(512, expected=0)
        batch = pf.DhBatch(512, expected=1)
        batch.close()
        with self.assertRaises(ValueError):
            batch.next()

    def test_named_groups_and_problems(self):
        ff = pf.named_group("ffdhe2048")
        self.assertEqual(ff.bits, 2048)
        self.assertEqual(ff.p >> (2048 - 64), 2**64 - 1)
        self.assertEqual(pf.check_dh(ff.pem()), 0)
        self.assertEqual(pf.named_group("modp_3072").bits, 3072)
        with self.assertRaises(pf.InvalidArgument):
            pf.named_group("ffdhe1234")
        with self.assertRaises(pf.DecodeError):
            pf.check_dh(b"garbage")

    def test_progress_can_cancel_and_errors_propagate(self):
        seen = []

        def stop(ev):
            seen.append(ev.candidates)
            return len(seen) >= 2

        t = time.monotonic()
        with self.assertRaises(pf.Cancelled):
            pf.generate_dh(4096, progress=stop)
        self.assertLess(time.monotonic() - t, 5)
        self.assertEqual(len(seen), 2)

        def boom(ev):
            raise RuntimeError("from the callback")

        with self.assertRaises(RuntimeError):
            pf.generate_dh(4096, progress=boom)

    def test_one_thread_rsa_calls_python_back_on_its_own_stack(self):
        # One thread: the key is made on this thread, on a private stack;
        # the callback (deep Python recursion included) runs back on this
        # thread's own stack, and can cancel or raise.
        def depth(n):
            return 0 if n == 0 else 1 + depth(n - 1)

        seen = []

        def record(ev):
            seen.append((ev.primes_found, depth(300)))
            return False

        seed = b"\x21" * 32
        key = pf.generate_rsa(2048, threads=1, seed=seed, progress=record)
        self.assertEqual(key.der(), pf.generate_rsa(2048, threads=2, seed=seed).der())
        self.assertTrue(seen)
        self.assertEqual(seen[-1], (2, 300))

        calls = []

        def stop(ev):
            calls.append(ev)
            return True

        # The first report cancels: a tick, or the search's final report
        # when the key takes less than one tick (one RSA-4096 key in
        # a hundred on a fast machine: waiting for a second report
        # made this test fail then).
        with self.assertRaises(pf.Cancelled):
            pf.generate_rsa(4096, threads=1, progress=stop)
        self.assertEqual(len(calls), 1)

        def boom(ev):
            raise RuntimeError("from the callback")

        with self.assertRaises(RuntimeError):
            pf.generate_rsa(2048, threads=1, progress=boom)

    def test_ctrl_c_interrupts_a_long_generation(self):
        code = (
            "import sys, primeforge\n"
            "print('ready', flush=True)\n"
            "try:\n"
            "    primeforge.generate_dh(8192)\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True); sys.exit(3)\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                cwd=os.path.dirname(os.path.abspath(__file__)))
        self.assertEqual(proc.stdout.readline().strip(), b"ready")
        time.sleep(0.5)
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 3, out)
        self.assertIn(b"interrupted", out)
        self.assertLess(time.monotonic() - t, 3)


class OpenSsh(unittest.TestCase):
    def test_ssh_keygen_reads_our_keys(self):
        import tempfile
        key = pf.generate_rsa(2048, threads=2)
        line = key.openssh_public("py@test")
        self.assertTrue(line.startswith(b"ssh-rsa AAAA") and line.endswith(b" py@test\n"))
        with tempfile.TemporaryDirectory() as d:
            for password in (None, "s3cret"):
                path = os.path.join(d, "id")
                with open(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600), "wb") as f:
                    f.write(key.openssh("py@test", password=password))
                args = ["ssh-keygen", "-y", "-f", path] + (["-P", password] if password else [])
                got = subprocess.run(args, capture_output=True, check=True).stdout
                self.assertEqual(got, line)
        with self.assertRaises(pf.InvalidArgument):
            key.openssh("two\nlines")
        with self.assertRaises(TypeError):
            key.openssh_public(b"bytes")
        three = pf.generate_rsa(2048, primes=3, threads=2)
        with self.assertRaises(pf.Unsupported):
            three.openssh()


class Fips186(unittest.TestCase):
    def test_generate_export_check_and_regenerate(self):
        seed = bytes(range(32))
        a = pf.generate_fips186(2048, q_size=256, threads=2, seed=seed)
        b = pf.generate_fips186(2048, q_size=256, threads=1, seed=seed)
        self.assertEqual(a.pem(x942=True), b.pem(x942=True))
        info = a.fips186
        self.assertEqual((info.hash, info.gindex, len(info.seed)), ("sha256", 1, 32))
        self.assertEqual((a.p - 1) % a.q, 0)
        self.assertEqual(a.q.bit_length(), 256)
        self.assertEqual(pow(a.g, a.q, a.p), 1)
        problems, verified = pf.check_dh_ex(a.pem(x942=True))
        self.assertEqual(problems, 0)
        self.assertEqual(verified, pf.PF_DH_VERIFIED_SEED | pf.PF_DH_VERIFIED_G_CANONICAL
                         | pf.PF_DH_VERIFIED_G_ORDER)
        self.assertTrue(a.dsa_pem().startswith(b"-----BEGIN DSA PARAMETERS-----\n"))
        self.assertEqual(pf.check_dh_ex(a.dsa_pem()), (0, pf.PF_DH_VERIFIED_G_ORDER))
        # From the domain seed alone; A.2.1's g; another hash.
        c = pf.generate_fips186(2048, q_size=256, domain_seed=info.seed, gindex=None)
        self.assertEqual((c.p, c.q, c.fips186.counter), (a.p, a.q, info.counter))
        self.assertIsNone(c.fips186.gindex)
        d = pf.generate_fips186(1024, hash="sha512", seed=seed)
        self.assertEqual((d.q.bit_length(), d.fips186.hash), (160, "sha512"))
        # The file keeps seed and counter, not the hash.
        back = pf.import_dh(a.pem(x942=True)).fips186
        self.assertEqual((back.seed, back.counter, back.hash), (info.seed, info.counter, None))
        self.assertIsNone(pf.named_group("ffdhe2048").fips186)

    def test_bad_requests_are_named(self):
        for kw in [dict(key_size=1536), dict(q_size=160), dict(hash="md5"), dict(hash="sha1"),
                   dict(gindex=256), dict(gindex=-1), dict(domain_seed=b"short")]:
            with self.assertRaises(pf.InvalidArgument, msg=str(kw)):
                pf.generate_fips186(**kw)
        with self.assertRaises(TypeError):
            pf.generate_fips186(domain_seed="text")

    @unittest.skipUnless(HAVE_CRYPTOGRAPHY, "needs pyca cryptography")
    def test_pyca_exchanges_over_our_parameters(self):
        params = pf.generate_fips186(2048, threads=2).to_cryptography()
        self.assertEqual(params.parameter_numbers().q.bit_length(), 224)
        k1, k2 = params.generate_private_key(), params.generate_private_key()
        self.assertEqual(k1.exchange(k2.public_key()), k2.exchange(k1.public_key()))


class Jobs(unittest.TestCase):
    def test_job_with_selectors_matches_the_blocking_call(self):
        seed = bytes(range(32))
        blocking = pf.generate_dh(512, threads=1, seed=seed)
        with pf.start_dh(512, threads=2, seed=seed) as job:
            sel = selectors.DefaultSelector()
            sel.register(job, selectors.EVENT_READ)  # uses job.fileno()
            self.assertTrue(sel.select(timeout=60), "job did not end")
            sel.close()
            done, ev = job.poll()
            self.assertTrue(done)
            self.assertEqual(ev.primes_found, 1)
            params = job.result()
            self.assertEqual(params.der(), blocking.der())
            with self.assertRaises(pf.AlreadyTaken):
                job.result()

    def test_pending_cancel_and_wrong_use(self):
        job = pf.start_rsa(8192, threads=1)
        self.assertFalse(job.done())
        with self.assertRaises(pf.Pending) as cm:
            job.result()
        self.assertEqual(cm.exception.status, 13)
        self.assertFalse(job.wait(0.01))
        job.cancel()
        self.assertTrue(job.wait(10))
        with self.assertRaises(pf.Cancelled):
            job.result()
        job.close()
        with self.assertRaises(ValueError):
            job.poll()
        with self.assertRaises(pf.InvalidArgument):
            pf.start_dh(100)
        with self.assertRaises(pf.InvalidArgument):
            pf.start_rsa(2048, seed=b"short")


class Async(unittest.IsolatedAsyncioTestCase):
    async def test_the_loop_keeps_running_while_keys_are_made(self):
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1

        t = asyncio.create_task(ticker())
        events = []
        # Seeded, so the work is fixed: this RSA-4096 seed took 0.27 s on
        # one thread here (2026-12-02), DH-1024's 0.05 s; a key from the
        # OS could take a few ms and leave no time to tick.
        started = time.monotonic()
        key, dh = await asyncio.gather(
            pf.generate_rsa_async(4096, threads=1, seed=b"\x09" * 32,
                                  progress=events.append),
            pf.generate_dh_async(1024, threads=1, seed=b"\x07" * 32),
        )
        elapsed = time.monotonic() - started
        t.cancel()
        self.assertEqual(key.bits, 4096)
        self.assertEqual(dh.der(), pf.generate_dh(1024, threads=2, seed=b"\x07" * 32).der())
        # A blocked loop would not have ticked while the keys were made; a
        # free one ticks about every 5 ms (asked for a quarter of that).
        self.assertGreater(ticks, elapsed / 0.005 / 4)
        self.assertGreater(ticks, 5)
        self.assertGreater(key.stats["exponentiations"], 0)

    async def test_cancelling_the_task_cancels_the_job(self):
        task = asyncio.create_task(pf.generate_dh_async(8192, threads=2))
        await asyncio.sleep(0.2)
        t = time.monotonic()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        # The job was cancelled: its thread is joined and its workers are
        # parked, none left running; released, no thread of it is left.
        self.assertLess(time.monotonic() - t, 3)
        self.assertEqual(pf.workers()[0], 0)
        pf.release_workers()
        self.assertEqual(pf.workers(), (0, 0))
        def library_threads() -> "list[str]":
            names = []
            for d in os.listdir("/proc/self/task"):
                # A thread that exits between the listing and the read (an
                # asyncio or other helper thread) is not running: skip it.
                try:
                    with open("/proc/self/task/%s/comm" % d) as f:
                        names.append(f.read().strip())
                except FileNotFoundError:
                    pass
            return [n for n in names if n.startswith("primeforge")]
        # A joined thread leaves /proc a moment after the join returns.
        deadline = time.monotonic() + 1
        while library_threads() and time.monotonic() < deadline:
            time.sleep(0.002)
        self.assertFalse(library_threads())

    async def test_progress_returning_true_cancels(self):
        with self.assertRaises(pf.Cancelled):
            await pf.generate_dh_async(8192, progress=lambda ev: ev.elapsed > 0.15,
                                       interval=0.02)


class Import(unittest.TestCase):
    def test_import_check_and_encrypt(self):
        key = pf.generate_rsa(2048, threads=2, fips=True)
        self.assertEqual(key.check(), 0)
        again = pf.import_rsa(key.pem(pkcs1=True))
        self.assertEqual(again.der(), key.der())
        enc = key.pem_encrypted("s3cret", kdf="pbkdf2")
        self.assertTrue(enc.startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n"))
        self.assertEqual(pf.import_rsa(enc, "s3cret").der(), key.der())
        with self.assertRaises(pf.PassphraseError):
            pf.import_rsa(enc, "wrong")
        with self.assertRaises(pf.PassphraseError):
            pf.import_rsa(enc)
        with self.assertRaises(pf.DecodeError) as cm:
            pf.import_rsa(key.public_pem())
        self.assertIn("public key", str(cm.exception))
        small = pf.generate_rsa(1024, threads=2)
        bits = small.check()
        self.assertEqual(bits & ~pf.RSA_CHECK_FIPS_MASK, 0)
        self.assertTrue(bits & 0x10000)
        if HAVE_CRYPTOGRAPHY:
            loaded = serialization.load_pem_private_key(key.pem_encrypted(b"pw"), b"pw")
            self.assertEqual(loaded.private_numbers().d, key.d)
            theirs = loaded.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.BestAvailableEncryption(b"pw2"))
            self.assertEqual(pf.import_rsa(theirs, b"pw2").d, key.d)

    @unittest.skipUnless(HAVE_CRYPTOGRAPHY, "the cryptography package is optional")
    def test_to_cryptography(self):
        key = pf.generate_rsa(1024, threads=2)
        ck = key.to_cryptography()
        self.assertEqual(ck.private_numbers().d, key.d)
        sig = ck.sign(b"m", padding.PKCS1v15(), hashes.SHA256())
        ck.public_key().verify(sig, b"m", padding.PKCS1v15(), hashes.SHA256())
        dh = pf.named_group("ffdhe2048").to_cryptography()
        self.assertEqual(dh.parameter_numbers().g, 2)

    def test_import_dh(self):
        ff = pf.named_group("ffdhe2048")
        self.assertEqual(pf.import_dh(ff.pem()).der(), ff.der())
        with self.assertRaises(pf.DecodeError):
            pf.import_dh(b"nonsense")


class Arguments(unittest.TestCase):
    def test_pyca_keywords_in_every_form(self):
        key = pf.generate_rsa(key_size=1024, public_exponent=3, threads=2)
        self.assertEqual((key.key_size, key.public_exponent), (1024, 3))
        dh = pf.generate_dh(key_size=512, generator=5, threads=2)
        self.assertEqual((dh.key_size, dh.g), (512, 5))
        # The blocking, background and asyncio functions take the same
        # keywords (the background ones without progress), all but the
        # size keyword-only.
        def params(fn):
            return {n: (p.kind, p.default) for n, p in inspect.signature(fn).parameters.items()
                    if n not in ("progress", "interval")}
        for blocking, start, coro in ((pf.generate_rsa, pf.start_rsa, pf.generate_rsa_async),
                                      (pf.generate_dh, pf.start_dh, pf.generate_dh_async)):
            self.assertEqual(params(blocking), params(start))
            self.assertEqual(params(blocking), params(coro))
            kinds = [p.kind for p in inspect.signature(blocking).parameters.values()]
            self.assertEqual(kinds[0], inspect.Parameter.POSITIONAL_OR_KEYWORD)
            self.assertEqual(set(kinds[1:]), {inspect.Parameter.KEYWORD_ONLY})
        with self.assertRaises(TypeError):
            pf.generate_rsa(1024, 65537)  # keywords only after the size

    def test_bad_types_and_ranges_are_named_before_the_library_is_called(self):
        # ctypes would truncate 2^32 + 1024 to 1024 and make a key.
        with self.assertRaises(pf.InvalidArgument) as cm:
            pf.generate_rsa(2**32 + 1024)
        self.assertIn("key_size", str(cm.exception))
        with self.assertRaises(pf.InvalidArgument) as cm:
            pf.generate_rsa(1024, public_exponent=2**64 + 65537)
        self.assertIn("public_exponent", str(cm.exception))
        with self.assertRaises(pf.InvalidArgument) as cm:
            pf.generate_dh(512, threads=-1)
        self.assertIn("threads", str(cm.exception))
        for call, name in ((lambda: pf.generate_rsa("2048"), "key_size"),
                           (lambda: pf.generate_rsa(1024, threads=1.5), "threads"),
                           (lambda: pf.generate_dh(512, generator=True), "generator"),
                           (lambda: pf.generate_rsa(1024, seed="x" * 32), "seed"),
                           (lambda: pf.generate_dh(512, progress="no"), "progress"),
                           (lambda: pf.import_rsa("-----BEGIN PRIVATE KEY-----"), "data"),
                           (lambda: pf.import_rsa(b"x", password=7), "password"),
                           (lambda: pf.check_dh(None), "data"),
                           (lambda: pf.named_group(2048), "name"),
                           (lambda: pf.start_rsa(1024, primes="2"), "primes"),
                           (lambda: pf.DhBatch(512, expected=None), "expected")):
            with self.assertRaises(TypeError) as cm:
                call()
            self.assertIn(name, str(cm.exception))
            self.assertNotIsInstance(cm.exception, ctypes.ArgumentError)
        with self.assertRaises(pf.InvalidArgument) as cm:
            pf.generate_rsa(1024).pem_encrypted("pw", kdf="md5")
        self.assertIn("kdf", str(cm.exception))

    def test_closed_objects_say_so(self):
        dh = pf.named_group("ffdhe2048")
        dh.close()
        with self.assertRaises(ValueError) as cm:
            dh.pem()
        self.assertIn("closed", str(cm.exception))
        with pf.named_group("ffdhe3072") as ff:
            self.assertEqual(ff.bits, 3072)


class Misc(unittest.TestCase):
    def test_errors_carry_the_library_message(self):
        with self.assertRaises(pf.InvalidArgument) as cm:
            pf.generate_rsa(1001)
        self.assertEqual(str(cm.exception), "invalid argument: bits must be even, 512..=16384")
        self.assertEqual(cm.exception.status, 2)
        with self.assertRaises(pf.InvalidArgument) as cm:
            pf.generate_dh(512, seed=b"\0" * 32)
        self.assertIn("all zeros", str(cm.exception))
        with self.assertRaises(pf.DecodeError) as cm:
            pf.check_dh(b"not parameters")
        self.assertIn("text with no PEM block", str(cm.exception))

    def test_version(self):
        self.assertRegex(pf.version(), r"^\d+\.\d+\.\d+")
        self.assertTrue(pf.build_info().startswith("primeforge " + pf.version()))
        self.assertTrue(pf.secure_memory_status() & pf.SECURE_ARENA)


if __name__ == "__main__":
    unittest.main()

// Exercises include/primeforge.hpp: RAII, exceptions with the status, the
// progress callback (including cancel), RSA and DH round trips, flags,
// Options temporaries and seeds, background jobs, DH batches.
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>

#include "primeforge.hpp"

static int failures = 0;
#define EXPECT(cond)                                                  \
    do {                                                              \
        if (!(cond)) {                                                \
            std::printf("FAIL line %d: %s\n", __LINE__, #cond);       \
            failures++;                                               \
        }                                                             \
    } while (0)

int main() {
    pf::Options opts;
    opts.threads = 2;
    opts.with_seed(std::string(32, '\x42'));
    unsigned calls = 0;
    opts.progress = [&](const pf_progress &) {
        calls++;
        return false;
    };
    pf::RsaKey key = pf::RsaKey::generate(1024, opts);
    EXPECT(key.bits() == 1024);
    EXPECT(opts.stats.exponentiations > 0);
    pf::Buffer pem = key.export_as(PF_FORMAT_PKCS8_PEM);
    EXPECT(pem.view().substr(0, 27) == "-----BEGIN PRIVATE KEY-----");
    // Same seed, same key.
    pf::RsaKey again = pf::RsaKey::generate(1024, opts);
    EXPECT(again.export_as(PF_FORMAT_PKCS1_DER).view() == key.export_as(PF_FORMAT_PKCS1_DER).view());

    // Errors carry the status.
    try {
        pf::RsaKey::generate(1001, opts);
        EXPECT(false);
    } catch (const pf::Error &e) {
        EXPECT(e.status() == PF_ERR_INVALID_ARGUMENT);
        EXPECT(std::string(e.what()) == "invalid argument: bits must be even, 512..=16384");
    }
    // Import, check, encrypted export.
    {
        pf::RsaKey back = pf::RsaKey::import(key.export_as(PF_FORMAT_PKCS1_PEM).view());
        EXPECT(back.export_as(PF_FORMAT_PKCS8_DER).view() == key.export_as(PF_FORMAT_PKCS8_DER).view());
        EXPECT((back.check() & ~PF_RSA_CHECK_FIPS_MASK) == 0);
        pf::Buffer enc = key.export_encrypted(PF_FORMAT_PKCS8_PEM, "pw", PF_KDF_PBKDF2_SHA256);
        pf::RsaKey opened = pf::RsaKey::import(enc.view(), "pw");
        EXPECT(opened.bits() == key.bits());
        try {
            pf::RsaKey::import(enc.view(), "nope");
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_ERR_PASSPHRASE);
        }
        pf::DhParams ff = pf::DhParams::named(PF_DH_FFDHE2048);
        pf::DhParams ff2 = pf::DhParams::import(ff.export_as(PF_FORMAT_PKCS3_PEM).view());
        EXPECT(ff2.bits() == 2048);
    }
    // Cancel from the callback (an exception in it also cancels).
    pf::Options cancel;
    cancel.progress = [](const pf_progress &) -> bool { throw 42; };
    try {
        pf::DhParams::generate(4096, cancel);
        EXPECT(false);
    } catch (const pf::Error &e) {
        EXPECT(e.status() == PF_ERR_CANCELLED);
    }

    pf::DhParams ff = pf::DhParams::named(PF_DH_FFDHE2048);
    EXPECT(ff.bits() == 2048);
    pf::Buffer params = ff.export_as(PF_FORMAT_PKCS3_PEM);
    EXPECT(pf::DhParams::check(params.view()) == 0);
    try {
        pf::DhParams::check("garbage");
        EXPECT(false);
    } catch (const pf::Error &e) {
        EXPECT(e.status() == PF_ERR_DECODE);
    }
    pf::Options small;
    pf::DhParams dh = pf::DhParams::generate(512, small);
    EXPECT(dh.component(PF_DH_G).size() == 1);

    // Flags: FIPS 186-5 refuses what it does not allow; provable primes.
    try {
        pf::RsaKey::generate(1024, pf::Options().with_flags(PF_RSA_FIPS));
        EXPECT(false);
    } catch (const pf::Error &e) {
        EXPECT(e.status() == PF_ERR_INVALID_ARGUMENT);
    }
    {
        // A temporary, chained; the FIPS key passes every check.
        pf::RsaKey fips =
            pf::RsaKey::generate(2048, pf::Options().with_threads(2).with_flags(PF_RSA_FIPS));
        EXPECT(fips.check() == 0);
        pf::RsaKey provable = pf::RsaKey::generate(1024, pf::Options().with_flags(PF_RSA_PROVABLE));
        EXPECT(provable.bits() == 1024 && (provable.check() & ~PF_RSA_CHECK_FIPS_MASK) == 0);
        // A seeded temporary gives the seeded key.
        pf::RsaKey seeded = pf::RsaKey::generate(
            1024, pf::Options().with_threads(1).with_seed(std::string(32, '\x42')));
        EXPECT(seeded.export_as(PF_FORMAT_PKCS1_DER).view() ==
               key.export_as(PF_FORMAT_PKCS1_DER).view());
        // RSA flags on a DH generation are refused, with the reason.
        try {
            pf::DhParams::generate(512, pf::Options().with_flags(PF_RSA_FIPS));
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_ERR_INVALID_ARGUMENT);
            EXPECT(std::string(e.what()).find("flags") != std::string::npos);
        }
    }
    // Seeds are 32 bytes; clearing one goes back to the OS.
    {
        pf::Options o;
        try {
            o.with_seed("short");
            EXPECT(false);
        } catch (const std::invalid_argument &) {
        }
        EXPECT(!o.has_seed());
        o.with_seed(std::string(32, '\x07'));
        EXPECT(o.has_seed());
        o.clear_seed();
        EXPECT(!o.has_seed());
    }
    // Background jobs: a DH job watched through its descriptor.
    {
        pf::Job job = pf::Job::dh(768, pf::Options().with_seed(std::string(32, '\x09')));
        EXPECT(job.fd() >= 0);
        struct pollfd pfd = {job.fd(), POLLIN, 0};
        int ready = poll(&pfd, 1, 60000);
        EXPECT(ready == 1);
        pf_progress snap{};
        EXPECT(job.done(&snap));
        EXPECT(snap.exponentiations > 0);
        try {
            job.take_rsa();
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_ERR_WRONG_KIND);
        }
        pf::DhParams p = job.take_dh();
        EXPECT(p.bits() == 768);
        EXPECT(pf::DhParams::check(p.export_as(PF_FORMAT_PKCS3_PEM).view()) == 0);
        // The same seed through the blocking call gives the same prime.
        pf::DhParams same = pf::DhParams::generate(768, pf::Options().with_seed(std::string(32, '\x09')));
        EXPECT(same.export_as(PF_FORMAT_PKCS3_DER).view() == p.export_as(PF_FORMAT_PKCS3_DER).view());
        try {
            job.take_dh();
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_ERR_ALREADY_TAKEN);
        }
    }
    // An RSA job: wait, take; a cancelled one ends with PF_ERR_CANCELLED.
    {
        pf::Job job = pf::Job::rsa(1024);
        job.wait();
        EXPECT(job.done());
        EXPECT(job.take_rsa().bits() == 1024);
        pf::Job slow = pf::Job::dh(4096);
        EXPECT(!slow.wait(std::chrono::milliseconds(1)));
        try {
            slow.take_dh();
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_PENDING);
        }
        slow.cancel();
        EXPECT(slow.wait(std::chrono::milliseconds(10000)));
        try {
            slow.take_dh();
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_ERR_CANCELLED);
        }
        pf::Job::dh(4096);  // destroyed running: cancelled and joined
    }
    // DH batches: distinct consecutive primes, the seed's sequence.
    {
        auto seed = std::string(32, '\x11');
        pf::DhBatch batch(768, 3, pf::Options().with_seed(seed));
        pf::DhBatch twin(768, 3, pf::Options().with_seed(seed));
        std::set<std::string> primes;
        pf::Options each;
        each.threads = 2;
        for (int i = 0; i < 3; i++) {
            pf::DhParams p = batch.next(each);
            EXPECT(each.stats.exponentiations > 0);
            std::string der(p.export_as(PF_FORMAT_PKCS3_DER).view());
            EXPECT(std::string(twin.next().export_as(PF_FORMAT_PKCS3_DER).view()) == der);
            primes.insert(der);
        }
        EXPECT(primes.size() == 3);
        try {
            batch.next(pf::Options().with_seed(seed));  // the batch has its own
            EXPECT(false);
        } catch (const pf::Error &e) {
            EXPECT(e.status() == PF_ERR_INVALID_ARGUMENT);
        }
    }
    EXPECT((pf::secure_memory_status() & PF_SECURE_ARENA) != 0);
    {
        // Parked pools: a two-thread call leaves its two workers idle, a
        // per-call one none, and release joins them.
        pf::release_workers();
        pf::DhParams::generate(512, pf::Options().with_threads(2));
        pf::WorkerCounts c = pf::workers();
        EXPECT(c.busy == 0 && c.idle == 2);
        pf::release_workers();
        pf::DhParams::generate(512, pf::Options().with_threads(2).with_flags(PF_THREADS_PER_CALL));
        c = pf::workers();
        EXPECT(c.busy == 0 && c.idle == 0);
    }
    EXPECT(pf::build_info().substr(0, 11) == "primeforge ");

    std::printf("cpp wrapper: %s, %u progress calls, %d failures\n", std::string(pf::version()).c_str(),
                calls, failures);
    return failures == 0 ? 0 : 1;
}

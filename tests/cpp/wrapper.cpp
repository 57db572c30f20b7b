// Exercises include/primeforge.hpp: RAII, exceptions with the status, the
// progress callback (including cancel), RSA and DH round trips.
#include <cstdio>
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
    opts.seed = std::string(32, '\x42');
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

    std::printf("cpp wrapper: %s, %u progress calls, %d failures\n", std::string(pf::version()).c_str(),
                calls, failures);
    return failures == 0 ? 0 : 1;
}

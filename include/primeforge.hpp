/*
 * primeforge.hpp: a header-only C++17 wrapper over primeforge.h.
 *
 * - RAII handles (std::unique_ptr with the matching pf_*_free deleter):
 *   pf::Buffer, pf::RsaKey, pf::DhParams.
 * - Failures throw pf::Error, which carries the pf_status and its text.
 * - Buffers keep secrets in primeforge's secure memory; view them with
 *   data()/size() or view(); copying them into std::string is your choice.
 * - Thread-safety follows the C API: distinct objects may be used from
 *   different threads; a progress callback runs on the calling thread.
 *
 * Example:
 *   pf::Options opts;                 // all cores, OS randomness
 *   pf::RsaKey key = pf::RsaKey::generate(3072, opts);
 *   pf::Buffer pem = key.export_as(PF_FORMAT_PKCS8_PEM);
 *   std::fwrite(pem.data(), 1, pem.size(), stdout);
 */
#ifndef PRIMEFORGE_HPP
#define PRIMEFORGE_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "primeforge.h"

namespace pf {

/** A failed call: what() is the library's message for it
 *  (pf_last_error_message(), e.g. "invalid argument: bits must be even,
 *  512..=16384"), or pf_status_str(status()). */
class Error : public std::runtime_error {
public:
    explicit Error(pf_status status)
        : std::runtime_error(pf_status_str(static_cast<uint32_t>(status))), status_(status) {}
    Error(pf_status status, const char *message) : std::runtime_error(message), status_(status) {}
    pf_status status() const noexcept { return status_; }

private:
    pf_status status_;
};

namespace detail {
/* Called right after the failing call, on the same thread: the message
 * is that call's. */
inline void check(pf_status st) {
    if (st != PF_OK) throw Error(st, pf_last_error_message());
}
struct BufferFree {
    void operator()(pf_buffer *b) const noexcept { pf_buffer_free(b); }
};
struct RsaFree {
    void operator()(pf_rsa_key *k) const noexcept { pf_rsa_free(k); }
};
struct DhFree {
    void operator()(pf_dh_params *d) const noexcept { pf_dh_free(d); }
};
}  // namespace detail

/** Bytes in primeforge's secure memory (wiped when destroyed). */
class Buffer {
public:
    explicit Buffer(pf_buffer *b) : b_(b) {}
    const uint8_t *data() const noexcept { return pf_buffer_data(b_.get()); }
    std::size_t size() const noexcept { return pf_buffer_len(b_.get()); }
    bool locked() const noexcept { return pf_buffer_locked(b_.get()); }
    std::string_view view() const noexcept {
        return std::string_view(reinterpret_cast<const char *>(data()), size());
    }

private:
    std::unique_ptr<pf_buffer, detail::BufferFree> b_;
};

/** Generation options: threads (0 = all cores), an optional 32-byte seed,
 *  an optional progress callback (return true to cancel), and the work
 *  counters of the last generation. */
class Options {
public:
    uint32_t threads = 0;
    std::string seed;  // empty: OS randomness; else exactly 32 bytes
    std::function<bool(const pf_progress &)> progress;
    pf_stats stats{};

    pf_options raw() {
        pf_options o = pf_options_default();
        o.threads = threads;
        if (!seed.empty()) {
            o.seed = reinterpret_cast<const uint8_t *>(seed.data());
            o.seed_len = seed.size();
        }
        if (progress) {
            o.progress = &Options::trampoline;
            o.user_data = this;
        }
        o.stats = &stats;
        return o;
    }

private:
    static int trampoline(void *user, const pf_progress *ev) {
        auto *self = static_cast<Options *>(user);
        try {
            return self->progress(*ev) ? 1 : 0;
        } catch (...) {
            return 1;  // never let an exception cross into the library
        }
    }
};

class RsaKey {
public:
    static RsaKey generate(uint32_t bits, Options &opts, uint64_t e = 65537, uint32_t primes = 2) {
        pf_options o = opts.raw();
        pf_rsa_key *k = nullptr;
        detail::check(pf_rsa_generate_ex(bits, e, primes, &o, &k));
        return RsaKey(k);
    }
    static RsaKey generate(uint32_t bits, uint32_t threads = 0) {
        pf_rsa_key *k = nullptr;
        detail::check(pf_rsa_generate(bits, threads, &k));
        return RsaKey(k);
    }
    /** Reads a private key (PEM/DER, PKCS#1/PKCS#8, encrypted PKCS#8 with
     *  `passphrase`; pass an empty view for none). */
    static RsaKey import(std::string_view data, std::string_view passphrase = {}) {
        pf_rsa_key *k = nullptr;
        const auto *pw = passphrase.empty() ? nullptr
                                            : reinterpret_cast<const uint8_t *>(passphrase.data());
        detail::check(pf_rsa_import(reinterpret_cast<const uint8_t *>(data.data()), data.size(), pw,
                                    passphrase.size(), &k));
        return RsaKey(k);
    }
    /** Problem bits (PF_RSA_CHECK_*); 0 = consistent and FIPS 186-5. */
    uint32_t check() const {
        uint32_t problems = 0;
        detail::check(pf_rsa_check(k_.get(), &problems));
        return problems;
    }
    Buffer export_as(pf_format format) const {
        pf_buffer *b = nullptr;
        detail::check(pf_rsa_export(k_.get(), static_cast<uint32_t>(format), &b));
        return Buffer(b);
    }
    /** PKCS#8 EncryptedPrivateKeyInfo (PF_FORMAT_PKCS8_PEM or _DER). */
    Buffer export_encrypted(pf_format format, std::string_view passphrase,
                            pf_kdf kdf = PF_KDF_SCRYPT) const {
        pf_buffer *b = nullptr;
        detail::check(pf_rsa_export_encrypted(
            k_.get(), static_cast<uint32_t>(format),
            reinterpret_cast<const uint8_t *>(passphrase.data()), passphrase.size(),
            static_cast<uint32_t>(kdf), &b));
        return Buffer(b);
    }
    Buffer component(pf_rsa_part part) const {
        pf_buffer *b = nullptr;
        detail::check(pf_rsa_component(k_.get(), static_cast<uint32_t>(part), &b));
        return Buffer(b);
    }
    uint32_t bits() const noexcept { return pf_rsa_bits(k_.get()); }
    uint32_t primes() const noexcept { return pf_rsa_primes(k_.get()); }
    const pf_rsa_key *get() const noexcept { return k_.get(); }

private:
    explicit RsaKey(pf_rsa_key *k) : k_(k) {}
    std::unique_ptr<pf_rsa_key, detail::RsaFree> k_;
};

class DhParams {
public:
    static DhParams generate(uint32_t bits, Options &opts, uint32_t generator = 2, uint32_t flags = 0) {
        pf_options o = opts.raw();
        pf_dh_params *d = nullptr;
        detail::check(pf_dh_generate_ex(bits, generator, flags, &o, &d));
        return DhParams(d);
    }
    /** Reads parameters (PEM/DER, PKCS#3/X9.42). */
    static DhParams import(std::string_view data) {
        pf_dh_params *d = nullptr;
        detail::check(pf_dh_import(reinterpret_cast<const uint8_t *>(data.data()), data.size(), &d));
        return DhParams(d);
    }
    static DhParams named(pf_dh_group group) {
        pf_dh_params *d = nullptr;
        detail::check(pf_dh_named(static_cast<uint32_t>(group), &d));
        return DhParams(d);
    }
    /** Problem bits (PF_DH_CHECK_*) of encoded parameters; 0 = fine.
     *  Throws on malformed input (PF_ERR_DECODE). */
    static uint32_t check(std::string_view encoded) {
        uint32_t problems = 0;
        detail::check(pf_dh_check(reinterpret_cast<const uint8_t *>(encoded.data()), encoded.size(),
                                  &problems));
        return problems;
    }
    Buffer export_as(pf_format format) const {
        pf_buffer *b = nullptr;
        detail::check(pf_dh_export(d_.get(), static_cast<uint32_t>(format), &b));
        return Buffer(b);
    }
    Buffer component(pf_dh_part part) const {
        pf_buffer *b = nullptr;
        detail::check(pf_dh_component(d_.get(), static_cast<uint32_t>(part), &b));
        return Buffer(b);
    }
    uint32_t bits() const noexcept { return pf_dh_bits(d_.get()); }

private:
    explicit DhParams(pf_dh_params *d) : d_(d) {}
    std::unique_ptr<pf_dh_params, detail::DhFree> d_;
};

inline std::string_view version() noexcept { return pf_version(); }

}  // namespace pf

#endif /* PRIMEFORGE_HPP */

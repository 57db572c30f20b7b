/*
 * primeforge.hpp: a header-only C++17 wrapper over primeforge.h.
 *
 * - RAII handles (std::unique_ptr with the matching pf_*_free deleter):
 *   pf::Buffer, pf::RsaKey, pf::DhParams, pf::Job (background generation
 *   for event loops), pf::DhBatch (many safe primes from one sieve).
 * - Failures throw pf::Error, which carries the pf_status and its text.
 * - Buffers keep secrets in primeforge's secure memory; view them with
 *   data()/size() or view(); copying them into std::string is your choice.
 * - Thread-safety follows the C API: distinct objects may be used from
 *   different threads; a progress callback runs on the calling thread.
 *
 * Example:
 *   pf::RsaKey key = pf::RsaKey::generate(3072, pf::Options());  // all cores, OS randomness
 *   pf::Buffer pem = key.export_as(PF_FORMAT_PKCS8_PEM);
 *   std::fwrite(pem.data(), 1, pem.size(), stdout);
 */
#ifndef PRIMEFORGE_HPP
#define PRIMEFORGE_HPP

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

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

/** Generation options, passed by const reference (a temporary works:
 *  `RsaKey::generate(3072, Options().with_flags(PF_RSA_FIPS))`):
 *  - threads: 0 = all cores (at most 1024);
 *  - flags: pf_rsa_flag bits for RSA (PF_RSA_FIPS, PF_RSA_PROVABLE,
 *    PF_RSA_SECURE_ARENA); must be 0 for DH, whose flags are an argument;
 *  - a seed (with_seed): exactly 32 bytes, copied here and wiped when the
 *    Options is destroyed or the seed cleared; without one, the OS's
 *    randomness;
 *  - progress: called on the calling thread every 50 ms and when a prime
 *    is found; returning true (or throwing) cancels, and the call then
 *    throws Error with PF_ERR_CANCELLED;
 *  - stats: the work counters of the last successful generation that used
 *    this object (written even through a const reference).
 *  One Options may serve one generation at a time. */
class Options {
public:
    uint32_t threads = 0;
    uint32_t flags = 0;
    std::function<bool(const pf_progress &)> progress;
    mutable pf_stats stats{};

    Options() = default;
    Options(const Options &) = default;
    Options(Options &&) = default;
    Options &operator=(const Options &) = default;
    Options &operator=(Options &&) = default;
    ~Options() { clear_seed(); }

    Options &with_threads(uint32_t n) {
        threads = n;
        return *this;
    }
    Options &with_flags(uint32_t f) {
        flags = f;
        return *this;
    }
    Options &with_progress(std::function<bool(const pf_progress &)> f) {
        progress = std::move(f);
        return *this;
    }
    /** Throws std::invalid_argument unless `len` is 32. */
    Options &with_seed(const void *data, std::size_t len) {
        if (len != seed_.size()) throw std::invalid_argument("pf::Options: a seed is 32 bytes");
        std::memcpy(seed_.data(), data, len);
        has_seed_ = true;
        return *this;
    }
    Options &with_seed(std::string_view seed) { return with_seed(seed.data(), seed.size()); }
    bool has_seed() const noexcept { return has_seed_; }
    void clear_seed() noexcept {
        volatile uint8_t *p = seed_.data();
        for (std::size_t i = 0; i < seed_.size(); i++) p[i] = 0;
        has_seed_ = false;
    }

    /** The C structure for this object; valid while it lives, unchanged. */
    pf_options raw() const {
        pf_options o = pf_options_default();
        o.threads = threads;
        o.flags = flags;
        if (has_seed_) {
            o.seed = seed_.data();
            o.seed_len = seed_.size();
        }
        if (progress) {
            o.progress = &Options::trampoline;
            o.user_data = const_cast<Options *>(this);
        }
        o.stats = &stats;
        return o;
    }

private:
    std::array<uint8_t, 32> seed_{};
    bool has_seed_ = false;

    static int trampoline(void *user, const pf_progress *ev) {
        const auto *self = static_cast<const Options *>(user);
        try {
            return self->progress(*ev) ? 1 : 0;
        } catch (...) {
            return 1;  // never let an exception cross into the library
        }
    }
};

class Job;
class DhBatch;

class RsaKey {
public:
    static RsaKey generate(uint32_t bits, const Options &opts, uint64_t e = 65537,
                           uint32_t primes = 2) {
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
    /** Reads a private key: PEM or DER; PKCS#1, PKCS#8, encrypted PKCS#8,
     *  PEM-encrypted or OpenSSH (`passphrase`: empty for none). Throws
     *  Error with PF_ERR_PASSPHRASE or PF_ERR_DECODE (what() names what
     *  the input was). Wiping `data` afterwards is the caller's business. */
    static RsaKey import(std::string_view data, std::string_view passphrase = {}) {
        pf_rsa_key *k = nullptr;
        const auto *pw = passphrase.empty() ? nullptr
                                            : reinterpret_cast<const uint8_t *>(passphrase.data());
        detail::check(pf_rsa_import(reinterpret_cast<const uint8_t *>(data.data()), data.size(), pw,
                                    passphrase.size(), &k));
        return RsaKey(k);
    }
    /** Problem bits (PF_RSA_CHECK_*); 0 = consistent and FIPS 186-5; bits
     *  in PF_RSA_CHECK_FIPS_MASK only say it is not FIPS 186-5. */
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
    friend class Job;
    explicit RsaKey(pf_rsa_key *k) : k_(k) {}
    std::unique_ptr<pf_rsa_key, detail::RsaFree> k_;
};

class DhParams {
public:
    /** `flags`: 0 or PF_DH_FLAG_LEGACY_G2 or PF_DH_FLAG_X942. */
    static DhParams generate(uint32_t bits, const Options &opts, uint32_t generator = 2,
                             uint32_t flags = 0) {
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
    const pf_dh_params *get() const noexcept { return d_.get(); }

private:
    friend class Job;
    friend class DhBatch;
    explicit DhParams(pf_dh_params *d) : d_(d) {}
    std::unique_ptr<pf_dh_params, detail::DhFree> d_;
};

/** A generation running on the library's own threads (pf_*_generate_start):
 *  for event loops, watch fd(); or poll done(), or wait(). Destroying a
 *  running Job cancels it and returns once its threads have exited. The
 *  Options' progress and stats are not used: done() gives a snapshot. */
class Job {
public:
    static Job rsa(uint32_t bits, const Options &opts = Options(), uint64_t e = 65537,
                   uint32_t primes = 2) {
        pf_options o = opts.raw();
        pf_job *j = nullptr;
        detail::check(pf_rsa_generate_start(bits, e, primes, &o, &j));
        return Job(j);
    }
    static Job dh(uint32_t bits, const Options &opts = Options(), uint32_t generator = 2,
                  uint32_t flags = 0) {
        pf_options o = opts.raw();
        pf_job *j = nullptr;
        detail::check(pf_dh_generate_start(bits, generator, flags, &o, &j));
        return Job(j);
    }
    /** Readable once the job has ended; owned by the job (never read or
     *  close it). -1 in a fork() child. */
    int fd() const noexcept { return pf_job_fd(j_.get()); }
    /** True once the job has ended, whether it succeeded or not (take_*
     *  then says which); `snapshot`, if given, receives its progress. */
    bool done(pf_progress *snapshot = nullptr) const {
        pf_status st = pf_job_poll(j_.get(), snapshot);
        if (st == PF_ERR_NULL_ARGUMENT || st == PF_ERR_FORKED) detail::check(st);
        return st != PF_PENDING;
    }
    /** Waits up to `timeout` for the job to end; true if it has. */
    bool wait(std::chrono::milliseconds timeout) const {
        auto ms = timeout.count() < 0 ? 0 : static_cast<uint64_t>(timeout.count());
        pf_status st = pf_job_wait(j_.get(), ms);
        if (st == PF_ERR_NULL_ARGUMENT || st == PF_ERR_FORKED) detail::check(st);
        return st != PF_PENDING;
    }
    /** Waits for the job to end, however long it takes. */
    void wait() const {
        pf_status st = pf_job_wait(j_.get(), UINT64_MAX);
        if (st == PF_ERR_NULL_ARGUMENT || st == PF_ERR_FORKED) detail::check(st);
    }
    /** Asks the job to stop; returns at once. */
    void cancel() const noexcept { (void)pf_job_cancel(j_.get()); }
    /** The key, once done(); throws Error with the job's failure
     *  (PF_ERR_CANCELLED after cancel()), PF_PENDING while it runs,
     *  PF_ERR_WRONG_KIND for a DH job, PF_ERR_ALREADY_TAKEN. */
    RsaKey take_rsa() {
        pf_rsa_key *k = nullptr;
        detail::check(pf_job_take_rsa(j_.get(), &k));
        return RsaKey(k);
    }
    /** The parameters, once done(); as take_rsa(). */
    DhParams take_dh() {
        pf_dh_params *d = nullptr;
        detail::check(pf_job_take_dh(j_.get(), &d));
        return DhParams(d);
    }
    const pf_job *get() const noexcept { return j_.get(); }

private:
    struct Free {
        void operator()(pf_job *j) const noexcept { pf_job_free(j); }
    };
    explicit Job(pf_job *j) : j_(j) {}
    std::unique_ptr<pf_job, Free> j_;
};

/** Consecutive safe primes of one size from one sieve (pf_dh_batch_*):
 *  cheaper per prime than separate generations when many are wanted.
 *  `expected` (1 to 4096) sizes the sieve; only the Options' seed is used
 *  here (with one, the whole sequence is the seed's). */
class DhBatch {
public:
    DhBatch(uint32_t bits, uint32_t expected, const Options &opts = Options(),
            uint32_t generator = 2, uint32_t flags = 0) {
        pf_options o = opts.raw();
        pf_dh_batch *b = nullptr;
        detail::check(pf_dh_batch_new(bits, generator, flags, expected, &o, &b));
        b_.reset(b);
    }
    /** The next safe prime: one search with the Options' threads,
     *  progress and stats (which must carry no seed). After a failure
     *  (a cancel) the batch is where it was. */
    DhParams next(const Options &opts = Options()) {
        pf_options o = opts.raw();
        pf_dh_params *d = nullptr;
        detail::check(pf_dh_batch_next(b_.get(), &o, &d));
        return DhParams(d);
    }

private:
    struct Free {
        void operator()(pf_dh_batch *b) const noexcept { pf_dh_batch_free(b); }
    };
    std::unique_ptr<pf_dh_batch, Free> b_;
};

/** PF_SECURE_* bits: whether secrets are in the wiped, undumpable arena
 *  in this process (pf_secure_memory_status). */
inline uint32_t secure_memory_status() {
    uint32_t flags = 0;
    detail::check(pf_secure_memory_status(&flags));
    return flags;
}

/** Worker threads running generations now (busy) and parked for the
 *  next one (idle): see pf_options.threads. */
struct WorkerCounts {
    uint32_t busy = 0;
    uint32_t idle = 0;
};

inline WorkerCounts workers() {
    WorkerCounts c;
    detail::check(pf_workers_count(&c.busy, &c.idle));
    return c;
}

/** Joins every parked worker now (before a sandbox, or a fork without
 *  exec); generations still running keep theirs. */
inline void release_workers() { detail::check(pf_workers_release()); }

/** "primeforge 0.2.0 (commit …), GMP 6.3.0, arithmetic …": for bug
 *  reports. */
inline std::string_view build_info() noexcept { return pf_build_info(); }

inline std::string_view version() noexcept { return pf_version(); }

}  // namespace pf

#endif /* PRIMEFORGE_HPP */

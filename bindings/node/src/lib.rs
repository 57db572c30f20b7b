//! The native half of primeforge's Node.js package: a Node-API addon over
//! primeforge's Rust core. `index.js` is the public API (argument checks
//! with `TypeError`/`RangeError`, Promises, `AbortSignal`, `KeyObject`);
//! this layer only converts values, starts and settles jobs, and maps the
//! core's errors to thrown errors whose `code` is the C API's status name
//! (`PF_ERR_DECODE`, …) and whose message is the library's text.
//!
//! Generations run as the core's background jobs (`primeforge::job`): the
//! library's driver and pool threads do the work and the event loop is
//! never blocked. A small waiter thread per job sleeps until the job ends
//! and then settles its Promise through Node-API's thread-safe function,
//! so the result is taken on the JavaScript thread. Secrets stay in the
//! core's secure memory until an export copies them into a JavaScript
//! `Buffer` (which the caller owns, and which `index.js` wipes where it
//! only passes through, e.g. on the way to a `KeyObject`).

#![deny(unsafe_code)]

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, Buffer, BufferSlice, Either3};
use napi::{Env, Status};
use napi_derive::napi;

use primeforge::dh::{self, check::DhReport, fips186, named::Group, DhParams, DhPart};
use primeforge::encode::pbes2::Kdf;
use primeforge::encode::{DhFormat, RsaFormat};
use primeforge::ffi::pf_status;
use primeforge::job::{Job, Kind, Output, TakeError, Work};
use primeforge::rsa::{self, RsaKey};
use primeforge::Error;

/// The status name of `e` in the C API (`PF_ERR_…`): one numbering for
/// every binding.
fn code_of(e: Error) -> String {
    format!("{:?}", pf_status::from(e))
}

/// Throws `e` as a JavaScript error (a `RangeError` for an argument out of
/// range, else an `Error`) with `code` set to its status name, and returns
/// the marker that tells napi-rs an exception is already pending.
fn throw(env: &Env, e: Error) -> napi::Error {
    let code = code_of(e);
    let message = e.to_string();
    let thrown = match e {
        Error::InvalidArgument(_) => env.throw_range_error(&message, Some(&code)),
        _ => env.throw_error(&message, Some(&code)),
    };
    match thrown {
        Ok(()) => napi::Error::from_status(Status::PendingException),
        Err(e) => e,
    }
}

fn range(env: &Env, what: &'static str) -> napi::Error {
    throw(env, Error::InvalidArgument(what))
}

/// A failed generation, as the settled value of `NativeJob.settle()`:
/// `index.js` turns it into the rejection (an `AbortError` when the
/// caller's signal cancelled it).
#[napi(object)]
pub struct Failure {
    /// The status name (`PF_ERR_CANCELLED`, …).
    pub code: String,
    /// The library's message.
    pub message: String,
}

fn failure(e: Error) -> Failure {
    Failure {
        code: code_of(e),
        message: e.to_string(),
    }
}

/// A progress report (the work counters of the generation so far).
#[napi(object)]
pub struct ProgressReport {
    /// Whether the generation has ended.
    pub done: bool,
    /// Candidates drawn.
    pub candidates: f64,
    /// Candidates that passed trial division.
    pub survivors: f64,
    /// Modular exponentiations started.
    pub exponentiations: f64,
    /// Primes found so far.
    pub primes_found: u32,
    /// Primes the generation needs.
    pub primes_needed: u32,
    /// Milliseconds since the generation started.
    pub elapsed_ms: f64,
}

/// One running generation.
#[napi]
pub struct NativeJob {
    job: Arc<Job>,
    kind: Kind,
    settling: bool,
}

impl Drop for NativeJob {
    /// Collected, or its environment torn down (a worker thread
    /// terminated, the process exiting): nobody can take the result any
    /// more, so the generation stops at its next check instead of running
    /// on for nothing. A no-op once the job has ended.
    fn drop(&mut self) {
        self.job.cancel();
    }
}

type Settled = Either3<NativeRsaKey, NativeDhParams, Failure>;
type Resolver = Box<dyn FnOnce(Env) -> napi::Result<Settled> + Send>;

fn take(job: &Job, kind: Kind) -> Settled {
    match job.take(kind) {
        Ok(Output::Rsa(key)) => Either3::A(NativeRsaKey { key: Some(key) }),
        Ok(Output::Dh(params)) => Either3::B(NativeDhParams { params }),
        Err(TakeError::Failed(e)) => Either3::C(failure(e)),
        Err(_) => Either3::C(failure(Error::Internal)),
    }
}

#[napi]
impl NativeJob {
    /// Asks the generation to stop; it ends with `PF_ERR_CANCELLED` at its
    /// next check (within tens of milliseconds). Returns at once.
    #[napi]
    pub fn cancel(&self) {
        self.job.cancel();
    }

    /// The latest progress report. Never blocks.
    #[napi]
    pub fn progress(&self) -> ProgressReport {
        let (status, p) = self.job.poll();
        ProgressReport {
            done: !matches!(status, primeforge::job::Status::Pending),
            candidates: p.candidates as f64,
            survivors: p.survivors as f64,
            exponentiations: p.exponentiations as f64,
            primes_found: p.primes_found as u32,
            primes_needed: p.primes_needed as u32,
            elapsed_ms: p.elapsed.as_secs_f64() * 1000.0,
        }
    }

    /// A Promise of the result (a key, parameters, or a `Failure`), settled
    /// on the JavaScript thread when the job ends. Once per job.
    #[napi(ts_return_type = "Promise<NativeRsaKey | NativeDhParams | Failure>")]
    pub fn settle<'env>(
        &mut self,
        env: &'env Env,
    ) -> napi::Result<napi::bindgen_prelude::Object<'env>> {
        if self.settling {
            return Err(throw(
                env,
                Error::InvalidArgument("the job is settled once"),
            ));
        }
        let (deferred, promise) = env.create_deferred::<Settled, Resolver>()?;
        let job = Arc::clone(&self.job);
        let kind = self.kind;
        let spawned = std::thread::Builder::new()
            .name("primeforge-node-wait".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                job.wait(None);
                deferred.resolve(Box::new(move |_env| Ok(take(&job, kind))));
            });
        if spawned.is_err() {
            self.job.cancel();
            return Err(throw(env, Error::Threads));
        }
        self.settling = true;
        Ok(promise)
    }
}

fn seed_slice(seed: &Option<Buffer>) -> Option<&[u8]> {
    seed.as_ref().map(|b| &b[..])
}

fn start(env: &Env, work: Work, threads: u32, seed: Option<Buffer>) -> napi::Result<NativeJob> {
    let kind = match work {
        Work::Rsa(_) => Kind::Rsa,
        _ => Kind::Dh,
    };
    match Job::start(work, threads, seed_slice(&seed)) {
        Ok(job) => Ok(NativeJob {
            job: Arc::new(job),
            kind,
            settling: false,
        }),
        Err(e) => Err(throw(env, e)),
    }
}

fn u64_of(env: &Env, v: &BigInt, what: &'static str) -> napi::Result<u64> {
    match v.get_u64() {
        (false, x, true) => Ok(x),
        _ => Err(range(env, what)),
    }
}

/// An RSA generation request (`fips`: refuse what FIPS 186-5 does not
/// allow; `provable`: primes by FIPS 186-5 A.1.2's provable method).
#[napi(object)]
pub struct RsaRequest {
    pub bits: u32,
    pub public_exponent: BigInt,
    pub primes: u32,
    pub threads: u32,
    pub seed: Option<Buffer>,
    pub fips: bool,
    pub provable: bool,
}

/// Starts an RSA key generation.
#[napi]
pub fn start_rsa(env: Env, req: RsaRequest) -> napi::Result<NativeJob> {
    let e = u64_of(
        &env,
        &req.public_exponent,
        "publicExponent must be an odd integer from 3 to 2^64 - 1",
    )?;
    let work = rsa::Request::with_flags(req.bits, e, req.primes, req.fips, req.provable)
        .map_err(|e| throw(&env, e))?;
    start(&env, Work::Rsa(work), req.threads, req.seed)
}

/// A DH generation request (`x942`: g generates the subgroup of order q,
/// for X9.42 output).
#[napi(object)]
pub struct DhRequest {
    pub bits: u32,
    pub generator: u32,
    pub x942: bool,
    pub threads: u32,
    pub seed: Option<Buffer>,
}

/// Starts a DH parameter generation.
#[napi]
pub fn start_dh(env: Env, req: DhRequest) -> napi::Result<NativeJob> {
    let flags = if req.x942 { dh::FLAG_X942 } else { 0 };
    let work = dh::Request::new(req.bits, req.generator, flags).map_err(|e| throw(&env, e))?;
    start(&env, Work::Dh(work), req.threads, req.seed)
}

fn hash_of(name: &str) -> Option<fips186::HashFn> {
    fips186::HashFn::from_name(name).filter(|h| *h != fips186::HashFn::Sha1)
}

/// A FIPS 186-4 domain parameter request (A.1.1.2; `qbits` 0: OpenSSL's
/// default for the size; `hash` null: the default for q's size; `gindex`
/// < 0: A.2.1's unverifiable g).
#[napi(object)]
pub struct Fips186Request {
    pub bits: u32,
    pub qbits: u32,
    pub hash: Option<String>,
    pub gindex: i32,
    pub threads: u32,
    pub seed: Option<Buffer>,
}

/// Starts a FIPS 186-4 domain parameter generation.
#[napi]
pub fn start_fips186(env: Env, req: Fips186Request) -> napi::Result<NativeJob> {
    let hash =
        match &req.hash {
            None => None,
            Some(name) => match hash_of(name) {
                Some(h) => Some(h),
                None => return Err(range(
                    &env,
                    "hash must be one of sha224, sha256, sha384, sha512, sha512-224, sha512-256",
                )),
            },
        };
    let mut work = fips186::Request::new(req.bits, req.qbits, hash).map_err(|e| throw(&env, e))?;
    work = match req.gindex {
        i if i < 0 => work.with_generator(fips186::GenMethod::Unverifiable),
        i => match u8::try_from(i) {
            Ok(i) => work.with_generator(fips186::GenMethod::Canonical(i)),
            Err(_) => {
                return Err(range(
                    &env,
                    "gindex must be from 0 to 255 (or -1 for an unverifiable g)",
                ))
            }
        },
    };
    start(&env, Work::Fips186(work), req.threads, req.seed)
}

/// An RSA private key; its secret parts live in the library's secure
/// memory and are wiped when it is disposed of or collected.
#[napi]
pub struct NativeRsaKey {
    key: Option<RsaKey>,
}

fn rsa_format(name: &str) -> Option<RsaFormat> {
    Some(match name {
        "pkcs8-pem" => RsaFormat::Pkcs8Pem,
        "pkcs8-der" => RsaFormat::Pkcs8Der,
        "pkcs1-pem" => RsaFormat::Pkcs1Pem,
        "pkcs1-der" => RsaFormat::Pkcs1Der,
        "spki-pem" => RsaFormat::SpkiPem,
        "spki-der" => RsaFormat::SpkiDer,
        "pkcs1-public-pem" => RsaFormat::RsaPublicPem,
        "pkcs1-public-der" => RsaFormat::RsaPublicDer,
        "openssh" => RsaFormat::OpenSsh,
        "openssh-public" => RsaFormat::OpenSshPublic,
        _ => return None,
    })
}

/// One problem an RSA check found.
#[napi(object)]
pub struct RsaProblem {
    /// What kind (`NotPrime`, `FipsSize`, …).
    pub kind: String,
    /// The library's description.
    pub text: String,
}

/// What an RSA check found.
#[napi(object)]
pub struct RsaCheck {
    /// Modulus size.
    pub bits: u32,
    /// Number of primes.
    pub primes: u32,
    /// The container it was read from ("PKCS#1", "PKCS#8", …).
    pub container: String,
    /// Problems that make the key unusable.
    pub problems: Vec<RsaProblem>,
    /// What FIPS 186-5 would refuse besides.
    pub fips: Vec<RsaProblem>,
}

fn rsa_check(r: rsa::check::RsaReport) -> RsaCheck {
    let list = |v: &[rsa::check::Problem]| {
        v.iter()
            .map(|p| RsaProblem {
                kind: format!("{:?}", p.kind),
                text: p.text.clone(),
            })
            .collect()
    };
    RsaCheck {
        bits: r.bits,
        primes: r.primes as u32,
        container: r.container.name().to_string(),
        problems: list(&r.problems),
        fips: list(&r.fips),
    }
}

impl NativeRsaKey {
    fn key(&self, env: &Env) -> napi::Result<&RsaKey> {
        match &self.key {
            Some(k) => Ok(k),
            None => Err(throw(
                env,
                Error::InvalidArgument("the key was disposed of"),
            )),
        }
    }
}

#[napi]
impl NativeRsaKey {
    /// Modulus size in bits.
    #[napi(getter)]
    pub fn bits(&self, env: Env) -> napi::Result<u32> {
        Ok(self.key(&env)?.bits())
    }

    /// The public exponent.
    #[napi(getter)]
    pub fn public_exponent(&self, env: Env) -> napi::Result<BigInt> {
        Ok(BigInt::from(self.key(&env)?.public_exponent()))
    }

    /// Number of primes.
    #[napi(getter)]
    pub fn primes(&self, env: Env) -> napi::Result<u32> {
        Ok(self.key(&env)?.prime_count() as u32)
    }

    /// The modulus, big-endian.
    #[napi]
    pub fn modulus<'env>(&self, env: &'env Env) -> napi::Result<BufferSlice<'env>> {
        BufferSlice::copy_from(env, self.key(env)?.n())
    }

    /// Encodes the key (`format`: see `rsa_format`), copied from secure
    /// memory straight into a new Buffer.
    #[napi]
    pub fn export<'env>(&self, env: &'env Env, format: String) -> napi::Result<BufferSlice<'env>> {
        let Some(f) = rsa_format(&format) else {
            return Err(range(env, "unknown RSA export format"));
        };
        let out = self.key(env)?.export(f).map_err(|e| throw(env, e))?;
        BufferSlice::copy_from(env, out.as_slice())
    }

    /// Encrypted PKCS#8 (PBES2, AES-256-CBC; `kdf` "scrypt" or "pbkdf2").
    #[napi]
    pub fn export_encrypted<'env>(
        &self,
        env: &'env Env,
        pem: bool,
        passphrase: Buffer,
        kdf: String,
    ) -> napi::Result<BufferSlice<'env>> {
        let kdf = match kdf.as_str() {
            "scrypt" => Kdf::Scrypt,
            "pbkdf2" => Kdf::Pbkdf2Sha256,
            _ => return Err(range(env, "kdf must be \"scrypt\" or \"pbkdf2\"")),
        };
        let out = self
            .key(env)?
            .export_encrypted(pem, &passphrase, kdf)
            .map_err(|e| throw(env, e))?;
        BufferSlice::copy_from(env, out.as_slice())
    }

    /// An OpenSSH private key with `comment`, encrypted (bcrypt-pbkdf,
    /// aes256-ctr) when `passphrase` is given.
    #[napi]
    pub fn export_openssh<'env>(
        &self,
        env: &'env Env,
        comment: String,
        passphrase: Option<Buffer>,
    ) -> napi::Result<BufferSlice<'env>> {
        let out = self
            .key(env)?
            .export_openssh(&comment, passphrase.as_ref().map(|b| &b[..]))
            .map_err(|e| throw(env, e))?;
        BufferSlice::copy_from(env, out.as_slice())
    }

    /// The `ssh-rsa AAAA… comment` line.
    #[napi]
    pub fn openssh_public(&self, env: Env, comment: String) -> napi::Result<String> {
        self.key(&env)?
            .openssh_public(&comment)
            .map_err(|e| throw(&env, e))
    }

    /// Checks the key's numbers (primality, consistency, FIPS 186-5).
    #[napi]
    pub fn check(&self, env: Env) -> napi::Result<RsaCheck> {
        rsa::check::check_key(self.key(&env)?)
            .map(rsa_check)
            .map_err(|e| throw(&env, e))
    }

    /// Wipes and frees the secret parts now; later calls throw.
    #[napi]
    pub fn dispose(&mut self) {
        self.key = None;
    }

    /// Whether `dispose()` was called.
    #[napi(getter)]
    pub fn disposed(&self) -> bool {
        self.key.is_none()
    }
}

/// Reads an RSA private key (PEM or DER: PKCS#1, PKCS#8, encrypted
/// PKCS#8, encrypted PEM, OpenSSH) into secure memory.
#[napi]
pub fn import_rsa(
    env: Env,
    data: Buffer,
    passphrase: Option<Buffer>,
) -> napi::Result<NativeRsaKey> {
    rsa::import(&data, passphrase.as_ref().map(|b| &b[..]))
        .map(|key| NativeRsaKey { key: Some(key) })
        .map_err(|e| throw(&env, e))
}

/// Reads an RSA private key and checks it, without keeping it.
#[napi]
pub fn check_rsa(env: Env, data: Buffer, passphrase: Option<Buffer>) -> napi::Result<RsaCheck> {
    rsa::check::check_private_key_with(&data, passphrase.as_ref().map(|b| &b[..]))
        .map(rsa_check)
        .map_err(|e| throw(&env, e))
}

/// DH parameters (public).
#[napi]
pub struct NativeDhParams {
    params: DhParams,
}

fn dh_format(name: &str) -> Option<DhFormat> {
    Some(match name {
        "pkcs3-pem" => DhFormat::Pkcs3Pem,
        "pkcs3-der" => DhFormat::Pkcs3Der,
        "x942-pem" => DhFormat::X942Pem,
        "x942-der" => DhFormat::X942Der,
        "dsa-pem" => DhFormat::DsaPem,
        "dsa-der" => DhFormat::DsaDer,
        _ => return None,
    })
}

/// FIPS 186-4 provenance of generated domain parameters.
#[napi(object)]
pub struct Fips186Info {
    /// domain_parameter_seed.
    pub seed: Buffer,
    /// pgenCounter.
    pub counter: u32,
    /// The hash A.1.1.2 ran with ("sha256", …).
    pub hash: Option<String>,
    /// The canonical generator's index (A.2.3), if g is one.
    pub gindex: Option<u32>,
}

#[napi]
impl NativeDhParams {
    /// Size of p in bits.
    #[napi(getter)]
    pub fn bits(&self) -> u32 {
        self.params.bits()
    }

    /// p, big-endian.
    #[napi]
    pub fn prime(&self) -> Buffer {
        Buffer::from(self.params.part_bytes(DhPart::P).unwrap_or_default())
    }

    /// g, big-endian.
    #[napi]
    pub fn generator(&self) -> Buffer {
        Buffer::from(self.params.part_bytes(DhPart::G).unwrap_or_default())
    }

    /// q, big-endian (for safe primes (p − 1)/2), or null.
    #[napi]
    pub fn subprime(&self) -> Option<Buffer> {
        self.params.part_bytes(DhPart::Q).map(Buffer::from)
    }

    /// Encodes the parameters (`format`: see `dh_format`).
    #[napi]
    pub fn export(&self, env: Env, format: String) -> napi::Result<Buffer> {
        let Some(f) = dh_format(&format) else {
            return Err(range(&env, "unknown DH export format"));
        };
        let out = self.params.export(f).map_err(|e| throw(&env, e))?;
        Ok(Buffer::from(out.as_slice().to_vec()))
    }

    /// The seed, counter, hash and generator index of FIPS 186-4
    /// parameters generated here, or null.
    #[napi]
    pub fn fips186(&self) -> Option<Fips186Info> {
        self.params.fips186().map(|p| Fips186Info {
            seed: Buffer::from(p.seed.clone()),
            counter: p.counter,
            hash: p.hash.map(|h| h.name().to_string()),
            gindex: match p.generator {
                fips186::Generator::Canonical(i) => Some(u32::from(i)),
                _ => None,
            },
        })
    }

    /// Checks the parameters (the problem bits of `checkDhParams`).
    #[napi]
    pub fn check(&self, env: Env) -> napi::Result<DhCheck> {
        let der = self
            .params
            .export(
                if self.params.q().is_some() && self.params.g_in_q_subgroup() {
                    DhFormat::X942Der
                } else {
                    DhFormat::Pkcs3Der
                },
            )
            .map_err(|e| throw(&env, e))?;
        dh::check::check_encoded(der.as_slice())
            .map(dh_check)
            .map_err(|e| throw(&env, e))
    }
}

/// What a DH parameter check found.
#[napi(object)]
pub struct DhCheck {
    /// Problem bits (0: none found; the `PF_DH_CHECK_*` values).
    pub problems: u32,
    /// Size of p.
    pub bits: u32,
    /// Size of q (X9.42), or null.
    pub q_bits: Option<u32>,
    /// "X9.42" or "PKCS#3".
    pub syntax: String,
    /// Whether p is a safe prime (q = (p − 1)/2).
    pub safe_prime: bool,
    /// The published group with this p and g ("RFC 7919 ffdhe2048", …),
    /// or null.
    pub named_group: Option<String>,
    /// FIPS 186-4 seed check: "verified", "verified-fips186-2", "failed"
    /// or null (no seed).
    pub seed: Option<String>,
    /// The generator check for FIPS 186-4 sizes: "canonical", "order" or
    /// "failed", or null.
    pub generator: Option<String>,
}

fn dh_check(r: DhReport) -> DhCheck {
    DhCheck {
        problems: r.problems,
        bits: r.bits,
        q_bits: r.q_bits,
        syntax: match r.syntax {
            primeforge::encode::sniff::DhSyntax::Pkcs3 => "PKCS#3",
            primeforge::encode::sniff::DhSyntax::X942 => "X9.42",
            primeforge::encode::sniff::DhSyntax::Dsa => "DSA",
        }
        .to_string(),
        safe_prime: r.safe_prime,
        named_group: r.known.map(|k| k.name.to_string()),
        seed: match r.seed {
            fips186::SeedCheck::Absent => None,
            fips186::SeedCheck::Verified(_) => Some("verified".into()),
            fips186::SeedCheck::VerifiedFips186_2(_) => Some("verified-fips186-2".into()),
            fips186::SeedCheck::Failed(_) => Some("failed".into()),
        },
        generator: r.generator.map(|g| {
            match g {
                fips186::GeneratorCheck::Canonical(_) => "canonical",
                fips186::GeneratorCheck::OrderOnly => "order",
                fips186::GeneratorCheck::Failed => "failed",
            }
            .to_string()
        }),
    }
}

/// Reads DH parameters (PEM or DER; PKCS#3, X9.42 or DSA).
#[napi]
pub fn import_dh(env: Env, data: Buffer) -> napi::Result<NativeDhParams> {
    dh::import(&data)
        .map(|params| NativeDhParams { params })
        .map_err(|e| throw(&env, e))
}

/// Reads DH parameters and checks them.
#[napi]
pub fn check_dh(env: Env, data: Buffer) -> napi::Result<DhCheck> {
    dh::check::check_encoded(&data)
        .map(dh_check)
        .map_err(|e| throw(&env, e))
}

/// A published group by name ("ffdhe2048" … "ffdhe8192", "modp2048" …).
#[napi]
pub fn named_group(env: Env, name: String) -> napi::Result<NativeDhParams> {
    match Group::ALL.into_iter().find(|g| g.name() == name) {
        Some(g) => Ok(NativeDhParams {
            params: g.params().clone(),
        }),
        None => Err(range(&env, "unknown group name (see NAMED_GROUPS)")),
    }
}

/// The names `named_group` takes.
#[napi]
pub fn named_groups() -> Vec<String> {
    Group::ALL.iter().map(|g| g.name().to_string()).collect()
}

/// The library's version.
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The version, commit, GMP version and arithmetic path of this build.
#[napi]
pub fn build_info() -> String {
    primeforge::build_info()
}

/// The bits `checkDhParams` may report, by name (the `PF_DH_CHECK_*`
/// values of the C API).
#[napi]
pub fn dh_check_bits() -> Vec<DhCheckBit> {
    use primeforge::dh::check as c;
    [
        ("P_NOT_PRIME", c::P_NOT_PRIME),
        ("P_NOT_SAFE_PRIME", c::P_NOT_SAFE_PRIME),
        ("NOT_SUITABLE_GENERATOR", c::NOT_SUITABLE_GENERATOR),
        ("Q_NOT_PRIME", c::Q_NOT_PRIME),
        ("INVALID_Q", c::INVALID_Q),
        ("INVALID_J", c::INVALID_J),
        ("MODULUS_TOO_SMALL", c::MODULUS_TOO_SMALL),
        ("MODULUS_TOO_LARGE", c::MODULUS_TOO_LARGE),
        ("Q_TOO_SMALL", c::Q_TOO_SMALL),
        ("SEED_INVALID", c::SEED_INVALID),
    ]
    .into_iter()
    .map(|(name, value)| DhCheckBit {
        name: name.to_string(),
        value,
    })
    .collect()
}

/// One DH check bit.
#[napi(object)]
pub struct DhCheckBit {
    /// Its name without the `PF_DH_CHECK_` prefix.
    pub name: String,
    /// Its value.
    pub value: u32,
}

// Package primeforge generates RSA keys and Diffie-Hellman parameters on
// every core through libprimeforge (cgo).
//
// The package finds the library through pkg-config: install it (from the
// primeforge source tree, `make install PREFIX=$HOME/.local`), point
// pkg-config at it if the prefix is not a system one, and build:
//
//	export PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig
//	go get github.com/primeforge/primeforge/bindings/go/primeforge
//	go build
//
// The pkg-config file of a prefix outside the system's library
// directories carries an rpath, so the program finds
// libprimeforge.so.0.MINOR at run time with nothing set.
//
// Generation runs as a background job in the library: the calling
// goroutine waits for it and a cancelled context cancels it (it ends
// within about 10 ms plus one exponentiation). Keys live in the library's
// secure memory until Close (or garbage collection) wipes them.
package primeforge

/*
#cgo pkg-config: primeforge
#include <stdlib.h>
#include "primeforge.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// Status is a pf_status code.
type Status uint32

// The statuses callers most often test for with errors.Is.
const (
	StatusInvalidArgument Status = C.PF_ERR_INVALID_ARGUMENT
	StatusCancelled       Status = C.PF_ERR_CANCELLED
	StatusDecode          Status = C.PF_ERR_DECODE
	StatusPassphrase      Status = C.PF_ERR_PASSPHRASE
)

// Error is a failed call: the status and the library's message for it.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return "primeforge: " + e.Message }

// Is lets errors.Is(err, primeforge.ErrCancelled) and friends match by status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && t.Message == ""
}

// Sentinels for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrCancelled       = &Error{Status: StatusCancelled}
	ErrDecode          = &Error{Status: StatusDecode}
	ErrPassphrase      = &Error{Status: StatusPassphrase}
)

// fail turns a status into an Error with pf_last_error_message, which is
// per OS thread: callers hold runtime.LockOSThread across the call.
func fail(st C.pf_status) error {
	if st == C.PF_OK {
		return nil
	}
	return &Error{Status: Status(st), Message: C.GoString(C.pf_last_error_message())}
}

// call runs f on one locked OS thread, so that the message read after a
// failure is that call's.
func call(f func() C.pf_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return fail(f())
}

// Version is the library's version.
func Version() string { return C.GoString(C.pf_version()) }

// Options for a generation. The zero value means all cores and fresh OS
// randomness.
type Options struct {
	// Threads: 0 = all cores, at most 1024.
	Threads uint32
	// Seed: nil, or 32 bytes that make the output a deterministic function
	// of the seed at any thread count.
	Seed []byte
	// FIPS (RSA only): refuse requests whose key would not meet FIPS 186-5.
	FIPS bool
	// Provable (RSA only): proven primes (Pocklington certificates, as
	// nettle makes them) instead of probable ones; not with FIPS.
	Provable bool
}

func (o *Options) raw() (C.pf_options, func(), error) {
	opts := C.pf_options_default()
	free := func() {}
	if o == nil {
		return opts, free, nil
	}
	opts.threads = C.uint32_t(o.Threads)
	if o.Seed != nil {
		// The seed goes to the library's secure memory through
		// pf_buffer_copy, which copies it with signals blocked and clears
		// the registers after: copied here (Go's memmove into C memory),
		// it would stay in vector registers that the next SIGPROF or
		// SIGURG writes to the signal stack, in Go's heap.
		var buf *C.pf_buffer
		if err := call(func() C.pf_status {
			return C.pf_buffer_copy(bytesArg(o.Seed), C.size_t(len(o.Seed)), &buf)
		}); err != nil {
			return opts, free, err
		}
		opts.seed = C.pf_buffer_data(buf)
		opts.seed_len = C.size_t(len(o.Seed))
		free = func() { C.pf_buffer_free(buf) }
	}
	if o.FIPS {
		opts.flags |= C.PF_RSA_FIPS
	}
	if o.Provable {
		opts.flags |= C.PF_RSA_PROVABLE
	}
	return opts, free, nil
}

// zero is what bytesArg passes for an empty, non-nil slice.
var zero [1]byte

// bytesArg passes b's own memory to a C function for the call (cgo allows
// it: a []byte holds no Go pointers); NULL for nil. The library reads a
// secret there (a key's text, a passphrase) with signals blocked, so no
// copy of it is made on the Go side, where it would be left in freed
// memory or in registers.
func bytesArg(b []byte) *C.uint8_t {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&zero[0]))
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// wait waits for a job, cancelling it when ctx is done; it frees the job.
func wait(ctx context.Context, job *C.pf_job, take func(*C.pf_job) C.pf_status) error {
	defer C.pf_job_free(job)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if st := C.pf_job_poll(job, nil); st != C.PF_PENDING {
			break
		}
		select {
		case <-ctx.Done():
			C.pf_job_cancel(job)
			C.pf_job_wait(job, ^C.uint64_t(0))
			return ctx.Err()
		case <-tick.C:
		}
	}
	return call(func() C.pf_status { return take(job) })
}

// RSAKey is an RSA private key in the library's secure memory.
type RSAKey struct{ k *C.pf_rsa_key }

func newRSAKey(k *C.pf_rsa_key) *RSAKey {
	key := &RSAKey{k}
	runtime.SetFinalizer(key, (*RSAKey).Close)
	return key
}

// GenerateRSA makes an RSA key by FIPS 186-5 A.1.3 with e = 65537 and two
// primes; bits is even, 512 to 16384. Cancelling ctx cancels the
// generation (the error is then ctx.Err()).
func GenerateRSA(ctx context.Context, bits uint32, o *Options) (*RSAKey, error) {
	opts, free, err := o.raw()
	if err != nil {
		return nil, err
	}
	defer free()
	var job *C.pf_job
	if err := call(func() C.pf_status {
		return C.pf_rsa_generate_start(C.uint32_t(bits), 65537, 2, &opts, &job)
	}); err != nil {
		return nil, err
	}
	var k *C.pf_rsa_key
	if err := wait(ctx, job, func(j *C.pf_job) C.pf_status { return C.pf_job_take_rsa(j, &k) }); err != nil {
		return nil, err
	}
	return newRSAKey(k), nil
}

// ImportRSA reads a private key: PEM or DER, PKCS#1, PKCS#8, or encrypted
// PKCS#8 with passphrase (nil for none).
func ImportRSA(data, passphrase []byte) (*RSAKey, error) {
	if len(data) == 0 {
		return nil, &Error{Status: StatusDecode, Message: "empty input"}
	}
	var k *C.pf_rsa_key
	err := call(func() C.pf_status {
		return C.pf_rsa_import(bytesArg(data), C.size_t(len(data)), bytesArg(passphrase), C.size_t(len(passphrase)), &k)
	})
	if err != nil {
		return nil, err
	}
	return newRSAKey(k), nil
}

// Close wipes and frees the key; further use returns an error.
func (k *RSAKey) Close() {
	if k.k != nil {
		C.pf_rsa_free(k.k)
		k.k = nil
	}
}

// Bits is the modulus size.
func (k *RSAKey) Bits() uint32 { return uint32(C.pf_rsa_bits(k.k)) }

func take(b *C.pf_buffer) []byte {
	defer C.pf_buffer_free(b)
	return C.GoBytes(unsafe.Pointer(C.pf_buffer_data(b)), C.int(C.pf_buffer_len(b)))
}

func (k *RSAKey) export(format C.uint32_t) ([]byte, error) {
	if k.k == nil {
		return nil, errors.New("primeforge: key is closed")
	}
	var b *C.pf_buffer
	if err := call(func() C.pf_status { return C.pf_rsa_export(k.k, format, &b) }); err != nil {
		return nil, err
	}
	return take(b), nil
}

// PEM is the PKCS#8 "PRIVATE KEY" PEM (a copy in Go memory: mind it).
func (k *RSAKey) PEM() ([]byte, error) { return k.export(C.PF_FORMAT_PKCS8_PEM) }

// PublicPEM is the SubjectPublicKeyInfo "PUBLIC KEY" PEM.
func (k *RSAKey) PublicPEM() ([]byte, error) { return k.export(C.PF_FORMAT_SPKI_PEM) }

// EncryptedPEM is PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2, scrypt,
// AES-256-CBC) under passphrase.
func (k *RSAKey) EncryptedPEM(passphrase []byte) ([]byte, error) {
	if k.k == nil {
		return nil, errors.New("primeforge: key is closed")
	}
	if len(passphrase) == 0 {
		return nil, &Error{Status: StatusInvalidArgument, Message: "invalid argument: the passphrase is empty"}
	}
	var b *C.pf_buffer
	err := call(func() C.pf_status {
		return C.pf_rsa_export_encrypted(k.k, C.PF_FORMAT_PKCS8_PEM, bytesArg(passphrase), C.size_t(len(passphrase)), C.PF_KDF_SCRYPT, &b)
	})
	if err != nil {
		return nil, err
	}
	return take(b), nil
}

// Check returns the PF_RSA_CHECK_* problem bits (0: consistent and FIPS
// 186-5; bits in FIPSMask only say the key is not FIPS 186-5).
func (k *RSAKey) Check() (uint32, error) {
	if k.k == nil {
		return 0, errors.New("primeforge: key is closed")
	}
	var problems C.uint32_t
	if err := call(func() C.pf_status { return C.pf_rsa_check(k.k, &problems) }); err != nil {
		return 0, err
	}
	return uint32(problems), nil
}

// FIPSMask holds the pf_rsa_check bits that concern FIPS 186-5 only.
const FIPSMask uint32 = C.PF_RSA_CHECK_FIPS_MASK

// DHParams are Diffie-Hellman parameters (public values).
type DHParams struct{ p *C.pf_dh_params }

func newDH(p *C.pf_dh_params) *DHParams {
	d := &DHParams{p}
	runtime.SetFinalizer(d, (*DHParams).Close)
	return d
}

// GenerateDH makes a safe prime of bits bits (256 to 16384) for generator
// g (2 is the usual choice). Cancelling ctx cancels the generation.
func GenerateDH(ctx context.Context, bits, generator uint32, o *Options) (*DHParams, error) {
	opts, free, err := o.raw()
	if err != nil {
		return nil, err
	}
	defer free()
	opts.flags = 0
	var job *C.pf_job
	if err := call(func() C.pf_status {
		return C.pf_dh_generate_start(C.uint32_t(bits), C.uint32_t(generator), 0, &opts, &job)
	}); err != nil {
		return nil, err
	}
	var p *C.pf_dh_params
	if err := wait(ctx, job, func(j *C.pf_job) C.pf_status { return C.pf_job_take_dh(j, &p) }); err != nil {
		return nil, err
	}
	return newDH(p), nil
}

var groups = map[string]C.uint32_t{
	"ffdhe2048": C.PF_DH_FFDHE2048, "ffdhe3072": C.PF_DH_FFDHE3072, "ffdhe4096": C.PF_DH_FFDHE4096,
	"ffdhe6144": C.PF_DH_FFDHE6144, "ffdhe8192": C.PF_DH_FFDHE8192,
}

// NamedGroup returns an RFC 7919 group ("ffdhe2048" … "ffdhe8192").
func NamedGroup(name string) (*DHParams, error) {
	g, ok := groups[name]
	if !ok {
		return nil, &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf("invalid argument: unknown group %q", name)}
	}
	var p *C.pf_dh_params
	if err := call(func() C.pf_status { return C.pf_dh_named(g, &p) }); err != nil {
		return nil, err
	}
	return newDH(p), nil
}

// Close frees the parameters.
func (d *DHParams) Close() {
	if d.p != nil {
		C.pf_dh_free(d.p)
		d.p = nil
	}
}

// Bits is the size of p.
func (d *DHParams) Bits() uint32 { return uint32(C.pf_dh_bits(d.p)) }

// PEM is the PKCS#3 "DH PARAMETERS" PEM, as openssl dhparam writes it.
func (d *DHParams) PEM() ([]byte, error) {
	if d.p == nil {
		return nil, errors.New("primeforge: parameters are closed")
	}
	var b *C.pf_buffer
	if err := call(func() C.pf_status { return C.pf_dh_export(d.p, C.PF_FORMAT_PKCS3_PEM, &b) }); err != nil {
		return nil, err
	}
	return take(b), nil
}

// CheckDH returns the PF_DH_CHECK_* problem bits of encoded parameters (0:
// nothing wrong).
func CheckDH(data []byte) (uint32, error) {
	if len(data) == 0 {
		return 0, &Error{Status: StatusDecode, Message: "malformed input: empty"}
	}
	var problems C.uint32_t
	if err := call(func() C.pf_status { return C.pf_dh_check(bytesArg(data), C.size_t(len(data)), &problems) }); err != nil {
		return 0, err
	}
	return uint32(problems), nil
}

// Hash is a pf_hash value: the hash of FIPS 186-4 domain parameters.
type Hash uint32

// The hashes of FIPS 186-4 domain parameters. SHA-1 is read and checked
// only (OpenSSL makes 1024/160 parameters with it).
const (
	HashDefault   Hash = 0
	HashSHA1      Hash = C.PF_HASH_SHA1
	HashSHA224    Hash = C.PF_HASH_SHA224
	HashSHA256    Hash = C.PF_HASH_SHA256
	HashSHA384    Hash = C.PF_HASH_SHA384
	HashSHA512    Hash = C.PF_HASH_SHA512
	HashSHA512224 Hash = C.PF_HASH_SHA512_224
	HashSHA512256 Hash = C.PF_HASH_SHA512_256
)

// FIPS186 says which FIPS 186-4 domain parameters (DSA, X9.42 DH) to make:
// p of PBits (1024, 2048, 3072) and q of QBits (0: 160, 224, 256, as
// OpenSSL) derived from a domain parameter seed (A.1.1.2) with Hash
// (HashDefault: SHA-224 for q of 224 bits, else SHA-256), and g the
// canonical generator of index GIndex (A.2.3) or, with Unverifiable,
// h^((p-1)/q) for the smallest h (A.2.1). DomainSeed, if set, runs
// A.1.1.2 from that seed only.
type FIPS186 struct {
	PBits, QBits uint32
	Hash         Hash
	GIndex       uint8
	Unverifiable bool
	DomainSeed   []byte
}

// GenerateFIPS186 makes FIPS 186-4 domain parameters on o.Threads threads;
// with o.Seed the result is the same at any thread count. Cancelling ctx
// cancels the generation. Export with X942PEM (seed and counter inside) or
// DSAPEM.
func GenerateFIPS186(ctx context.Context, f FIPS186, o *Options) (*DHParams, error) {
	opts, free, err := o.raw()
	if err != nil {
		return nil, err
	}
	defer free()
	opts.flags = 0
	req := C.pf_dh_fips186_default(C.uint32_t(f.PBits))
	req.qbits = C.uint32_t(f.QBits)
	req.hash = C.uint32_t(f.Hash)
	req.gindex = C.int32_t(f.GIndex)
	if f.Unverifiable {
		req.gindex = -1
	}
	if len(f.DomainSeed) > 0 {
		p := C.CBytes(f.DomainSeed)
		defer C.free(p)
		req.seed = (*C.uint8_t)(p)
		req.seed_len = C.size_t(len(f.DomainSeed))
	}
	var job *C.pf_job
	if err := call(func() C.pf_status { return C.pf_dh_generate_fips186_start(&req, &opts, &job) }); err != nil {
		return nil, err
	}
	var p *C.pf_dh_params
	if err := wait(ctx, job, func(j *C.pf_job) C.pf_status { return C.pf_job_take_dh(j, &p) }); err != nil {
		return nil, err
	}
	return newDH(p), nil
}

func (d *DHParams) export(format C.uint32_t) ([]byte, error) {
	if d.p == nil {
		return nil, errors.New("primeforge: parameters are closed")
	}
	var b *C.pf_buffer
	if err := call(func() C.pf_status { return C.pf_dh_export(d.p, format, &b) }); err != nil {
		return nil, err
	}
	return take(b), nil
}

// X942PEM is "X9.42 DH PARAMETERS" (p, g, q, and FIPS 186-4's seed and
// counter when the parameters have them).
func (d *DHParams) X942PEM() ([]byte, error) { return d.export(C.PF_FORMAT_X942_PEM) }

// DSAPEM is "DSA PARAMETERS" (p, q, g), as openssl dsaparam writes them.
func (d *DHParams) DSAPEM() ([]byte, error) { return d.export(C.PF_FORMAT_DSA_PEM) }

// FIPS186Info is what makes FIPS 186-4 parameters verifiable.
type FIPS186Info struct {
	Seed    []byte
	Counter uint32
	// Hash is HashDefault when not known (parameters read from a file).
	Hash Hash
	// GIndex is the canonical generator's index, -1 when g is not
	// canonical or not known.
	GIndex int32
}

// FIPS186 returns the parameters' seed, counter, hash and generator index;
// ok is false for parameters without a seed.
func (d *DHParams) FIPS186() (info FIPS186Info, ok bool, err error) {
	if d.p == nil {
		return info, false, errors.New("primeforge: parameters are closed")
	}
	var seed *C.pf_buffer
	var counter, hash C.uint32_t
	var gindex C.int32_t
	var st C.pf_status
	err = call(func() C.pf_status {
		st = C.pf_dh_fips186_info(d.p, &seed, &counter, &hash, &gindex)
		return st
	})
	if st == C.PF_ERR_UNSUPPORTED {
		return info, false, nil
	}
	if err != nil {
		return info, false, err
	}
	return FIPS186Info{take(seed), uint32(counter), Hash(hash), int32(gindex)}, true, nil
}

// CheckDHVerified is CheckDH, with the PF_DH_VERIFIED_* bits saying what
// was verified (seed and counter, canonical g, g's order).
func CheckDHVerified(data []byte) (problems, verified uint32, err error) {
	if len(data) == 0 {
		return 0, 0, &Error{Status: StatusDecode, Message: "malformed input: empty"}
	}
	var p, v C.uint32_t
	if err := call(func() C.pf_status { return C.pf_dh_check_ex(bytesArg(data), C.size_t(len(data)), &p, &v) }); err != nil {
		return 0, 0, err
	}
	return uint32(p), uint32(v), nil
}

// The PF_DH_VERIFIED_* bits of CheckDHVerified.
const (
	VerifiedSeed          uint32 = C.PF_DH_VERIFIED_SEED
	VerifiedSeedFIPS186_2 uint32 = C.PF_DH_VERIFIED_SEED_FIPS186_2
	VerifiedGCanonical    uint32 = C.PF_DH_VERIFIED_G_CANONICAL
	VerifiedGOrder        uint32 = C.PF_DH_VERIFIED_G_ORDER
)

// OpenSSH is the key as ssh-keygen -t rsa writes it ("OPENSSH PRIVATE
// KEY") with comment, encrypted under passphrase as ssh-keygen encrypts
// (bcrypt-pbkdf, AES-256-CTR) when passphrase is not nil.
func (k *RSAKey) OpenSSH(comment string, passphrase []byte) ([]byte, error) {
	return k.openssh(comment, passphrase, 0)
}

// OpenSSHPublic is the "ssh-rsa AAAA... comment" line for authorized_keys.
func (k *RSAKey) OpenSSHPublic(comment string) ([]byte, error) {
	return k.openssh(comment, nil, 1)
}

func (k *RSAKey) openssh(comment string, passphrase []byte, public C.uint32_t) ([]byte, error) {
	if k.k == nil {
		return nil, errors.New("primeforge: key is closed")
	}
	c := C.CString(comment)
	defer C.free(unsafe.Pointer(c))
	var b *C.pf_buffer
	if err := call(func() C.pf_status {
		return C.pf_rsa_export_openssh(k.k, c, bytesArg(passphrase), C.size_t(len(passphrase)), public, &b)
	}); err != nil {
		return nil, err
	}
	return take(b), nil
}

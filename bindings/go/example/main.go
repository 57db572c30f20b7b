// A cgo example for primeforge: generate an RSA key with a Go progress
// callback (Go state reaches it through cgo.Handle), export PKCS#8 PEM,
// and use a named DH group. Built and run by tests/go.rs; by hand, with
// the library installed and PKG_CONFIG_PATH pointing at its .pc file:
//
//	go run ./example
package main

/*
#cgo pkg-config: primeforge
#include <stdlib.h>
#include "primeforge.h"
extern int goProgress(void *user, pf_progress *ev); // cgo exports cannot take const
*/
import "C"

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/cgo"
	"unsafe"
)

//export goProgress
func goProgress(user unsafe.Pointer, ev *C.pf_progress) C.int {
	// user points at C memory holding the handle (see GenerateRSA).
	cb := (*(*cgo.Handle)(user)).Value().(func(uint64) bool)
	if cb(uint64(ev.candidates)) {
		return 1 // non-zero cancels
	}
	return 0
}

// statusError turns a failed status into an error carrying the library's
// message for it. pf_last_error_message is per OS thread: call this right
// after the failing call, with the goroutine locked to its thread
// (runtime.LockOSThread), as the functions below do.
func statusError(st C.pf_status) error {
	return fmt.Errorf("%s", C.GoString(C.pf_last_error_message()))
}

// GenerateRSA returns a PKCS#8 PEM key; progress returning true cancels.
func GenerateRSA(bits uint32, progress func(uint64) bool) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := cgo.NewHandle(progress)
	defer h.Delete()
	// The handle travels in C memory: user_data may not hold a Go pointer
	// (cgo's pointer rules) and a handle is not a pointer (go vet).
	slot := C.malloc(C.size_t(unsafe.Sizeof(h)))
	defer C.free(slot)
	*(*cgo.Handle)(slot) = h
	opts := C.pf_options_default()
	opts.progress = (C.pf_progress_fn)(unsafe.Pointer(C.goProgress))
	opts.user_data = slot
	var key *C.pf_rsa_key
	if st := C.pf_rsa_generate_ex(C.uint32_t(bits), 65537, 2, &opts, &key); st != C.PF_OK {
		return nil, statusError(st)
	}
	defer C.pf_rsa_free(key)
	var buf *C.pf_buffer
	if st := C.pf_rsa_export(key, C.PF_FORMAT_PKCS8_PEM, &buf); st != C.PF_OK {
		return nil, statusError(st)
	}
	defer C.pf_buffer_free(buf)
	return C.GoBytes(unsafe.Pointer(C.pf_buffer_data(buf)), C.int(C.pf_buffer_len(buf))), nil
}

// importAndCheck reads a private key (no passphrase) and returns its
// PF_RSA_CHECK_* problem bits.
func importAndCheck(pem []byte) (uint32, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	data := C.CBytes(pem)
	defer C.free(data)
	var key *C.pf_rsa_key
	if st := C.pf_rsa_import((*C.uint8_t)(data), C.size_t(len(pem)), nil, 0, &key); st != C.PF_OK {
		return 0, statusError(st)
	}
	defer C.pf_rsa_free(key)
	var problems C.uint32_t
	if st := C.pf_rsa_check(key, &problems); st != C.PF_OK {
		return 0, statusError(st)
	}
	return uint32(problems), nil
}

func main() {
	calls := 0
	pem, err := GenerateRSA(2048, func(candidates uint64) bool { calls++; return false })
	if err != nil || !bytes.HasPrefix(pem, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		fmt.Println("go: FAIL", err)
		os.Exit(1)
	}
	// Cancel from the callback.
	_, err = GenerateRSA(8192, func(uint64) bool { return true })
	if err == nil || err.Error() != "cancelled by the caller" {
		fmt.Println("go: cancel FAIL", err)
		os.Exit(1)
	}
	// Errors say what was wrong.
	_, err = GenerateRSA(1001, func(uint64) bool { return false })
	if err == nil || err.Error() != "invalid argument: bits must be even, 512..=16384" {
		fmt.Println("go: error detail FAIL", err)
		os.Exit(1)
	}
	// Import a PEM key back and check it.
	if problems, err := importAndCheck(pem); err != nil || problems&^C.PF_RSA_CHECK_FIPS_MASK != 0 {
		fmt.Println("go: import/check FAIL", err, problems)
		os.Exit(1)
	}
	var dh *C.pf_dh_params
	if st := C.pf_dh_named(C.PF_DH_FFDHE2048, &dh); st != C.PF_OK {
		fmt.Println("go: FAIL", statusError(st))
		os.Exit(1)
	}
	bits := C.pf_dh_bits(dh)
	C.pf_dh_free(dh)
	fmt.Printf("go: ok (version %s, %d progress calls, ffdhe2048 %d bits)\n", C.GoString(C.pf_version()), calls, bits)
}

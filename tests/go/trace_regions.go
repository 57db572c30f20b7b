// A program for tests/go.rs: the Go package's calls with secrets, each in
// a region that the test traces with ptrace (tests/common/trace.rs) and
// that this program ends by sending its thread SIGSTOP. Regions: 1, the
// control (the seed copied by Go's own memmove, then junk through the
// same registers); 2, GenerateRSA with the seed on 2 threads; 3,
// EncryptedPEM with the passphrase; 4, ImportRSA of it; 5, Close of both
// keys.
//
//	trace_regions DIR BITS   (DIR holds seed and pass, 32 bytes each)
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/primeforge/primeforge/bindings/go/primeforge"
)

// main runs on the process's first thread, the one the test traces.
func init() { runtime.LockOSThread() }

// readSecret reads n bytes of a file straight into Go memory (read(2): no
// copy passes them through registers).
func readSecret(path string, n int) []byte {
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		fail(err)
	}
	defer syscall.Close(fd)
	b := make([]byte, n)
	if got, err := syscall.Read(fd, b); err != nil || got != n {
		fail(fmt.Errorf("read %s: %d, %v", path, got, err))
	}
	return b
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trace_regions:", err)
	os.Exit(2)
}

// mark ends a region: a SIGSTOP to this thread, which the tracer counts.
func mark() {
	syscall.RawSyscall(syscall.SYS_TGKILL, uintptr(syscall.Getpid()), uintptr(syscall.Gettid()), uintptr(syscall.SIGSTOP))
}

var junk = [32]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

//go:noinline
func copy32(dst *[32]byte, src []byte) { copy(dst[:], src) }

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: trace_regions DIR BITS"))
	}
	bits, _ := strconv.Atoi(os.Args[2])
	seed := readSecret(os.Args[1]+"/seed", 32)
	pass := readSecret(os.Args[1]+"/pass", 32)
	var tmp [32]byte
	mark()
	copy32(&tmp, seed)
	copy32(&tmp, junk[:])
	mark()
	key, err := primeforge.GenerateRSA(context.Background(), uint32(bits), &primeforge.Options{Threads: 2, Seed: seed})
	mark()
	if err != nil {
		fail(err)
	}
	pem, err := key.EncryptedPEM(pass)
	mark()
	if err != nil {
		fail(err)
	}
	again, err := primeforge.ImportRSA(pem, pass)
	mark()
	if err != nil {
		fail(err)
	}
	key.Close()
	again.Close()
	mark()
}

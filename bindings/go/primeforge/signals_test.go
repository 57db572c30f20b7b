package primeforge

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
)

const window = 16

// TestHelperLearnPrimes is not a test of its own: run by
// TestSecretsStayOutOfProfilingSignalFrames in a child process, it prints
// the complemented bytes of p and q of the key a seed gives, so that the
// parent never holds them in plain form.
func TestHelperLearnPrimes(t *testing.T) {
	seedHex := os.Getenv("PRIMEFORGE_LEARN_SEED")
	if seedHex == "" {
		t.Skip("a helper of TestSecretsStayOutOfProfilingSignalFrames")
	}
	seed, _ := hex.DecodeString(seedHex)
	key, err := GenerateRSA(context.Background(), 2048, &Options{Threads: 2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	text, err := key.PEM()
	key.Close()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(text)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range k.(*rsa.PrivateKey).Primes {
		fmt.Printf("PRIME %s\n", hex.EncodeToString(complemented(p.Bytes())))
	}
}

// complemented returns every byte of b complemented.
func complemented(b []byte) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = ^x
	}
	return out
}

// windows adds every 16-byte window of the secret whose complement is
// inv, in both byte orders, complemented (the set never holds a plain
// window, so the scan cannot find its own needles).
func windows(inv []byte, into map[[window]byte]bool) {
	rev := make([]byte, len(inv))
	for i := range inv {
		rev[i] = inv[len(inv)-1-i]
	}
	for _, s := range [][]byte{inv, rev} {
		for i := 0; i+window <= len(s); i++ {
			var w [window]byte
			copy(w[:], s[i:i+window])
			into[w] = true
		}
	}
}

// scanProcess counts the places in this process's readable private
// memory where a window of the set lies (complemented as it is read).
func scanProcess(t *testing.T, set map[[window]byte]bool) (hits int, where []string) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	buf := make([]byte, 1<<20+window)
	// The buffer holds what it read (the live key, in the control scan):
	// cleared before it is dropped, or a later scan would find it.
	defer func() {
		for i := range buf {
			buf[i] = 0
		}
	}()
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1][0] != 'r' || f[1][3] != 'p' || strings.Contains(line, "[vvar") ||
			strings.Contains(line, "[vsyscall") {
			continue
		}
		r := strings.SplitN(f[0], "-", 2)
		lo, _ := strconv.ParseUint(r[0], 16, 64)
		hi, _ := strconv.ParseUint(r[1], 16, 64)
		for at := lo; at < hi; at += 1 << 20 {
			n := hi - at
			if n > uint64(len(buf)) {
				n = uint64(len(buf))
			}
			got, _ := mem.ReadAt(buf[:n], int64(at))
			var w [window]byte
			for i := 0; i+window <= got; i++ {
				for j := 0; j < window; j++ {
					w[j] = ^buf[i+j]
				}
				if set[w] {
					hits++
					where = append(where, fmt.Sprintf("%#x in %s", at+uint64(i), line))
				}
			}
		}
	}
	return hits, where
}

// Generations on 1 and 2 threads while the Go runtime's CPU profiler
// sends SIGPROF (its handlers run on an alternate signal stack of Go's on
// every thread): afterwards no 16-byte window of the seed, p or q is
// anywhere in the process.
func TestSecretsStayOutOfProfilingSignalFrames(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/mem")
	}
	set := map[[window]byte]bool{}
	type run struct {
		seed    []byte
		threads uint32
	}
	var runs []run
	for _, threads := range []uint32{1, 2, 1, 2} {
		seed := make([]byte, 32)
		if _, err := rand.Read(seed); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLearnPrimes$", "-test.v")
		cmd.Env = append(os.Environ(), "PRIMEFORGE_LEARN_SEED="+hex.EncodeToString(seed))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the helper failed: %v\n%s", err, out)
		}
		primes := 0
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "PRIME ") {
				inv, _ := hex.DecodeString(strings.TrimPrefix(line, "PRIME "))
				windows(inv, set)
				primes++
			}
		}
		if primes != 2 {
			t.Fatalf("the helper printed %d primes:\n%s", primes, out)
		}
		windows(complemented(seed), set)
		runs = append(runs, run{seed, threads})
	}
	runtime.SetCPUProfileRate(1000)
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		key, err := GenerateRSA(context.Background(), 2048, &Options{Threads: r.threads, Seed: r.seed})
		if err != nil {
			pprof.StopCPUProfile()
			t.Fatal(err)
		}
		if i == 0 {
			// The control: the live key's parts are in the library's
			// secure memory, which the scan must see.
			if hits, _ := scanProcess(t, set); hits == 0 {
				pprof.StopCPUProfile()
				t.Fatal("the scan does not find the live key: it is broken")
			}
		}
		key.Close()
		for i := range r.seed {
			r.seed[i] = 0
		}
	}
	pprof.StopCPUProfile()
	runtime.GC()
	if hits, where := scanProcess(t, set); hits > 0 {
		t.Fatalf("%d windows of the seed, p or q after the keys were closed:\n%s", hits, strings.Join(where, ""))
	}
}

package primeforge

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func TestRSAGenerateCheckImportEncrypt(t *testing.T) {
	key, err := GenerateRSA(context.Background(), 2048, &Options{Threads: 2, FIPS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	if key.Bits() != 2048 {
		t.Fatalf("bits %d", key.Bits())
	}
	if p, err := key.Check(); err != nil || p != 0 {
		t.Fatalf("check: %x %v", p, err)
	}
	pem, err := key.PEM()
	if err != nil || !bytes.HasPrefix(pem, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Fatalf("pem: %v", err)
	}
	again, err := ImportRSA(pem, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	pem2, _ := again.PEM()
	if !bytes.Equal(pem, pem2) {
		t.Fatal("import changed the key")
	}
	enc, err := key.EncryptedPEM([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ImportRSA(enc, []byte("wrong")); !errors.Is(err, ErrPassphrase) {
		t.Fatalf("wrong passphrase: %v", err)
	}
	opened, err := ImportRSA(enc, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	opened.Close()
}

func TestSeededIsDeterministic(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	a, err := GenerateRSA(context.Background(), 1024, &Options{Threads: 1, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateRSA(context.Background(), 1024, &Options{Threads: 2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := a.PEM()
	pb, _ := b.PEM()
	if !bytes.Equal(pa, pb) {
		t.Fatal("same seed, different keys")
	}
}

func TestProvablePrimes(t *testing.T) {
	seed := bytes.Repeat([]byte{9}, 32)
	pems := [][]byte{}
	for _, o := range []*Options{
		{Threads: 1, Seed: seed, Provable: true},
		{Threads: 2, Seed: seed, Provable: true},
		{Threads: 1, Seed: seed},
	} {
		k, err := GenerateRSA(context.Background(), 512, o)
		if err != nil {
			t.Fatal(err)
		}
		// Only the FIPS 186-5 notes (bits 16 and up: 512 bits is below
		// FIPS sizes), no problem.
		if p, err := k.Check(); err != nil || p&0xFFFF != 0 {
			t.Fatalf("check: %x %v", p, err)
		}
		pem, _ := k.PEM()
		k.Close()
		pems = append(pems, pem)
	}
	if !bytes.Equal(pems[0], pems[1]) || bytes.Equal(pems[0], pems[2]) {
		t.Fatal("provable keys: not the same at 1 and 2 threads, or the same as the default")
	}
	_, err := GenerateRSA(context.Background(), 2048, &Options{FIPS: true, Provable: true})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("FIPS and Provable: %v", err)
	}
}

func TestErrorsCarryTheMessage(t *testing.T) {
	_, err := GenerateRSA(context.Background(), 1001, nil)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%v", err)
	}
	if err.Error() != "primeforge: invalid argument: bits must be even, 512..=16384" {
		t.Fatalf("message: %q", err.Error())
	}
	if _, err := ImportRSA([]byte("junk"), nil); !errors.Is(err, ErrDecode) {
		t.Fatalf("%v", err)
	}
}

func TestContextCancelsAGeneration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := GenerateDH(ctx, 8192, 2, &Options{Threads: 2})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestDH(t *testing.T) {
	p, err := GenerateDH(context.Background(), 512, 2, &Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pem, err := p.PEM()
	if err != nil {
		t.Fatal(err)
	}
	if bits, err := CheckDH(pem); err != nil || bits != 0 {
		t.Fatalf("check: %x %v", bits, err)
	}
	ff, err := NamedGroup("ffdhe2048")
	if err != nil || ff.Bits() != 2048 {
		t.Fatalf("%v", err)
	}
	if _, err := NamedGroup("nope"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%v", err)
	}
}

func TestFIPS186(t *testing.T) {
	seed := bytes.Repeat([]byte{5}, 32)
	f := FIPS186{PBits: 2048, QBits: 256, GIndex: 3}
	a, err := GenerateFIPS186(context.Background(), f, &Options{Threads: 2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := GenerateFIPS186(context.Background(), f, &Options{Threads: 1, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pa, _ := a.X942PEM()
	pb, _ := b.X942PEM()
	if !bytes.Equal(pa, pb) || !bytes.HasPrefix(pa, []byte("-----BEGIN X9.42 DH PARAMETERS-----\n")) {
		t.Fatalf("%s\n%s", pa, pb)
	}
	info, ok, err := a.FIPS186()
	if err != nil || !ok || info.Hash != HashSHA256 || info.GIndex != 3 || len(info.Seed) != 32 {
		t.Fatalf("%+v %v %v", info, ok, err)
	}
	problems, verified, err := CheckDHVerified(pa)
	if err != nil || problems != 0 || verified != VerifiedSeed|VerifiedGCanonical|VerifiedGOrder {
		t.Fatalf("%x %x %v", problems, verified, err)
	}
	// From the domain seed alone.
	c, err := GenerateFIPS186(context.Background(), FIPS186{PBits: 2048, QBits: 256, GIndex: 3, DomainSeed: info.Seed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if pc, _ := c.X942PEM(); !bytes.Equal(pc, pa) {
		t.Fatal("the domain seed did not regenerate the parameters")
	}
	if d, _ := a.DSAPEM(); !bytes.HasPrefix(d, []byte("-----BEGIN DSA PARAMETERS-----\n")) {
		t.Fatalf("%s", d)
	}
	ff, _ := NamedGroup("ffdhe2048")
	if _, ok, err := ff.FIPS186(); ok || err != nil {
		t.Fatalf("named group: %v %v", ok, err)
	}
	if _, err := GenerateFIPS186(context.Background(), FIPS186{PBits: 1536}, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := GenerateFIPS186(ctx, FIPS186{PBits: 3072}, &Options{Threads: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
}

func TestOpenSSH(t *testing.T) {
	key, err := GenerateRSA(context.Background(), 2048, &Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	line, err := key.OpenSSHPublic("go@test")
	if err != nil || !bytes.HasPrefix(line, []byte("ssh-rsa AAAA")) || !bytes.HasSuffix(line, []byte(" go@test\n")) {
		t.Fatalf("%q %v", line, err)
	}
	pem, err := key.OpenSSH("go@test", []byte("pw"))
	if err != nil || !bytes.HasPrefix(pem, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n")) {
		t.Fatalf("%v", err)
	}
	back, err := ImportRSA(pem, []byte("pw"))
	if err != nil || back.Bits() != 2048 {
		t.Fatalf("%v", err)
	}
	back.Close()
	if _, err := key.OpenSSH("a\nb", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("%v", err)
	}
}

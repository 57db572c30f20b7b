// Reads an encrypted PKCS#8 RSA key with github.com/youmark/pkcs8 (the Go
// reader Debian packages), prints its modulus in hex, and writes the same
// key encrypted by that package (PBKDF2-HMAC-SHA256, AES-256-CBC) as PEM.
package main

import (
	"encoding/pem"
	"fmt"
	"os"

	"github.com/youmark/pkcs8"
)

func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "ENCRYPTED PRIVATE KEY" {
		panic("not an encrypted PKCS#8 PEM")
	}
	key, err := pkcs8.ParsePKCS8PrivateKeyRSA(block.Bytes, []byte(os.Args[2]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "parse:", err)
		os.Exit(3)
	}
	if err := key.Validate(); err != nil {
		panic(err)
	}
	der, err := pkcs8.ConvertPrivateKeyToPKCS8(key, []byte(os.Args[2]))
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(os.Args[3], pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", key.N)
}

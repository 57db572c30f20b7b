package primeforge_test

import (
	"context"
	"fmt"
	"time"

	"github.com/primeforge/primeforge/bindings/go/primeforge"
)

// Generate 2048-bit DH parameters, giving up after a minute.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	params, err := primeforge.GenerateDH(ctx, 2048, 2, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer params.Close()
	pem, _ := params.PEM()
	fmt.Println(string(pem[:29]))
	// Output: -----BEGIN DH PARAMETERS-----
}

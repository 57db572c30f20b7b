module github.com/primeforge/primeforge/bindings/go

go 1.19

# Install primeforge's C library: the shared library with its SONAME links,
# the static library (with GMP and everything but pf_* made local), the
# headers and a pkg-config file; and the command-line tool with its manual
# pages and shell completions (generated from its option definitions).
#
#   cargo build --release && make install PREFIX=/usr/local [DESTDIR=...]
#
# (The Rust side needs nothing of this: use the crate. The C examples have
# their own Makefile in c-examples/.)

PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
# Where OpenSSL 3 looks for provider modules (`openssl version -m` shows
# the system's; a PREFIX install uses its own, named in openssl.cnf).
MODULESDIR ?= $(LIBDIR)/ossl-modules
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
PROFILE    ?= release
TARGET     ?= target/$(PROFILE)
VERSION    := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
MAJOR      := $(firstword $(subst ., ,$(VERSION)))
MINOR      := $(word 2,$(subst ., ,$(VERSION)))
# The SONAME's version (README, "ABI policy"): 0.MINOR while 0.x, else MAJOR.
SOVERSION  := $(if $(filter 0,$(MAJOR)),0.$(MINOR),$(MAJOR))
# What a static link of the Rust standard library needs besides libc
# (rustc --print native-static-libs says -lgcc_s too; it is left out: the C
# compiler driver adds libgcc's unwinder itself — libgcc_s for a dynamic
# program, libgcc_eh with -static, which has no static libgcc_s).
PRIVATE_LIBS := -lutil -lrt -lpthread -lm -ldl -lc

all:
	cargo build --release

# The static library as installed: every member of cargo's archive (our
# code, the Rust standard library, GMP) partially linked into one object in
# which only the pf_* symbols stay global, so that a program that also links
# GMP (directly, or through GnuTLS/nettle) keeps its own and ours stays
# private, as in the shared library. The .llvmbc/.llvmcmd sections (bitcode
# embedded in the Rust standard library's objects) are dropped: nothing
# needs them, and binutils' LLVM plugin may fail to read them.
$(TARGET)/libprimeforge-private.a: $(TARGET)/libprimeforge.a
	rm -f $@ $(TARGET)/primeforge-private.o
	ld -r --whole-archive $< -o $(TARGET)/primeforge-private.o
	objcopy --wildcard --keep-global-symbol='pf_*' \
	    --remove-section=.llvmbc --remove-section=.llvmcmd $(TARGET)/primeforge-private.o
	ar rcs $@ $(TARGET)/primeforge-private.o
	rm -f $(TARGET)/primeforge-private.o

private-archive: $(TARGET)/libprimeforge-private.a

install: $(TARGET)/libprimeforge-private.a
	test -f $(TARGET)/libprimeforge.so || { echo "run cargo build --release first"; exit 1; }
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	install -m 0755 $(TARGET)/libprimeforge.so $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(VERSION)
	ln -sf libprimeforge.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(SOVERSION)
	ln -sf libprimeforge.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libprimeforge.so
	install -m 0644 $(TARGET)/libprimeforge-private.a $(DESTDIR)$(LIBDIR)/libprimeforge.a
	install -m 0644 include/primeforge.h include/primeforge.hpp $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' -e 's|@PRIVATE_LIBS@|$(PRIVATE_LIBS)|' \
	    primeforge.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/primeforge.pc
	test -x $(TARGET)/primeforge || { echo "the CLI is missing: cargo build --release"; exit 1; }
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/site-functions \
	    $(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	install -m 0755 $(TARGET)/primeforge $(DESTDIR)$(BINDIR)/primeforge
	$(TARGET)/primeforge man $(DESTDIR)$(MANDIR)/man1
	$(TARGET)/primeforge completions bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/primeforge
	$(TARGET)/primeforge completions zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_primeforge
	$(TARGET)/primeforge completions fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/primeforge.fish
	test -f $(TARGET)/libprimeforge_provider.so || { echo "the OpenSSL provider is missing: cargo build --release"; exit 1; }
	install -d $(DESTDIR)$(MODULESDIR)
	install -m 0755 $(TARGET)/libprimeforge_provider.so $(DESTDIR)$(MODULESDIR)/primeforge.so
	install -d $(DESTDIR)$(DATADIR)/doc/primeforge
	install -m 0644 README.md LICENSE-MIT LICENSE-APACHE COPYING COPYING.LESSER THIRD-PARTY.md \
	    SECURITY.md $(DESTDIR)$(DATADIR)/doc/primeforge/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(SOVERSION) \
	      $(DESTDIR)$(LIBDIR)/libprimeforge.so $(DESTDIR)$(LIBDIR)/libprimeforge.a \
	      $(DESTDIR)$(INCLUDEDIR)/primeforge.h $(DESTDIR)$(INCLUDEDIR)/primeforge.hpp \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/primeforge.pc \
	      $(DESTDIR)$(BINDIR)/primeforge $(DESTDIR)$(MANDIR)/man1/primeforge.1 \
	      $(DESTDIR)$(MANDIR)/man1/primeforge-*.1 \
	      $(DESTDIR)$(DATADIR)/bash-completion/completions/primeforge \
	      $(DESTDIR)$(DATADIR)/zsh/site-functions/_primeforge \
	      $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/primeforge.fish
	rm -rf $(DESTDIR)$(DATADIR)/doc/primeforge
	rm -f $(DESTDIR)$(MODULESDIR)/primeforge.so

.PHONY: all install uninstall private-archive

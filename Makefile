# Install primeforge's C library: the shared library with its SONAME links,
# the static library (with GMP and everything but pf_* made local), the
# headers and a pkg-config file; and the command-line tool with its manual
# pages and shell completions (generated from its option definitions).
#
#   make && make install PREFIX=/usr/local [DESTDIR=...]
#
# (`make install` alone builds what is missing.) The shared library, the
# tool and the provider are installed stripped, their debug information in
# separate files under $(DEBUGDIR) (gdb finds them through a debuglink);
# `make install STRIP=` installs them as built.
#
# (The Rust side needs nothing of this: use the crate. The C examples have
# their own Makefile in c-examples/.)

PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
# Where OpenSSL 3 looks for provider modules: the system OpenSSL's (from
# `pkg-config --variable=modulesdir libcrypto`, or `openssl version -m`)
# when it lies inside PREFIX — e.g. PREFIX=/usr on Debian puts it in
# /usr/lib/x86_64-linux-gnu/ossl-modules — else PREFIX's own, to be named
# in openssl.cnf.
SYSTEM_MODULESDIR := $(or $(shell pkg-config --variable=modulesdir libcrypto 2>/dev/null),$(shell openssl version -m 2>/dev/null | sed -n 's/^MODULESDIR: "\(.*\)"/\1/p'))
MODULESDIR ?= $(if $(filter $(PREFIX)/%,$(SYSTEM_MODULESDIR)),$(SYSTEM_MODULESDIR),$(LIBDIR)/ossl-modules)
DEBUGDIR   ?= $(LIBDIR)/debug
STRIP      ?= strip
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

# What `make install` installs, built when missing (a fresh clone's plain
# `make install` works; after source changes, `make` rebuilds first).
$(TARGET)/libprimeforge.a $(TARGET)/libprimeforge.so $(TARGET)/primeforge $(TARGET)/libprimeforge_provider.so &:
	cargo build --release

# The .pc files' directories, relative to ${prefix} where they lie in it.
PC_LIBDIR     := $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCLUDEDIR := $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
# A LIBDIR outside the dynamic linker's default directories is found at run
# time only through an rpath, so primeforge.pc carries one there: a program
# built from `pkg-config --libs primeforge` alone (a cgo package's
# `#cgo pkg-config:` line, a Makefile) then runs with nothing set. A
# system LIBDIR (PREFIX=/usr) gets none, as distributions require.
# PC_RPATH= leaves it out.
comma := ,
SYSTEM_LIBDIRS := /lib /lib64 /usr/lib /usr/lib64 \
    $(foreach t,$(shell $(or $(CC),cc) -print-multiarch 2>/dev/null),/lib/$(t) /usr/lib/$(t))
PC_RPATH ?= $(if $(filter $(SYSTEM_LIBDIRS),$(patsubst %/,%,$(LIBDIR))),,-Wl$(comma)-rpath$(comma)$${libdir})

# install_bin SOURCE DEST: installs an executable or shared object, stripped
# with its debug information split into $(DEBUGDIR) unless STRIP is empty.
define install_bin
	install -m 0755 $(1) $(2)
	$(if $(STRIP),install -d $(DESTDIR)$(DEBUGDIR) && \
	    objcopy --only-keep-debug $(2) $(DESTDIR)$(DEBUGDIR)/$(notdir $(2)).debug && \
	    $(STRIP) --strip-debug --strip-unneeded $(2) && \
	    objcopy --add-gnu-debuglink=$(DESTDIR)$(DEBUGDIR)/$(notdir $(2)).debug $(2))
endef

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

install: $(TARGET)/libprimeforge-private.a $(TARGET)/libprimeforge.so $(TARGET)/primeforge $(TARGET)/libprimeforge_provider.so
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)
	$(call install_bin,$(TARGET)/libprimeforge.so,$(DESTDIR)$(LIBDIR)/libprimeforge.so.$(VERSION))
	ln -sf libprimeforge.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(SOVERSION)
	ln -sf libprimeforge.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libprimeforge.so
	install -m 0644 $(TARGET)/libprimeforge-private.a $(DESTDIR)$(LIBDIR)/libprimeforge.a
	install -m 0644 include/primeforge.h include/primeforge.hpp $(DESTDIR)$(INCLUDEDIR)/
	for pc in primeforge primeforge-static; do \
	    sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' \
	        -e 's|@VERSION@|$(VERSION)|' -e 's|@PRIVATE_LIBS@|$(PRIVATE_LIBS)|' -e 's|@RPATH@ |$(if $(PC_RPATH),$(PC_RPATH) ,)|' \
	        $$pc.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/$$pc.pc; done
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/site-functions \
	    $(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	$(call install_bin,$(TARGET)/primeforge,$(DESTDIR)$(BINDIR)/primeforge)
	$(TARGET)/primeforge man $(DESTDIR)$(MANDIR)/man1
	$(TARGET)/primeforge completions bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/primeforge
	$(TARGET)/primeforge completions zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_primeforge
	$(TARGET)/primeforge completions fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/primeforge.fish
	install -d $(DESTDIR)$(MODULESDIR)
	$(call install_bin,$(TARGET)/libprimeforge_provider.so,$(DESTDIR)$(MODULESDIR)/primeforge.so)
	@echo "the OpenSSL provider is in $(MODULESDIR)"
	install -d $(DESTDIR)$(DATADIR)/doc/primeforge
	install -m 0644 README.md LICENSE-MIT LICENSE-APACHE COPYING COPYING.LESSER THIRD-PARTY.md \
	    SECURITY.md $(DESTDIR)$(DATADIR)/doc/primeforge/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libprimeforge.so.$(SOVERSION) \
	      $(DESTDIR)$(LIBDIR)/libprimeforge.so $(DESTDIR)$(LIBDIR)/libprimeforge.a \
	      $(DESTDIR)$(INCLUDEDIR)/primeforge.h $(DESTDIR)$(INCLUDEDIR)/primeforge.hpp \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/primeforge.pc $(DESTDIR)$(LIBDIR)/pkgconfig/primeforge-static.pc \
	      $(DESTDIR)$(DEBUGDIR)/libprimeforge.so.$(VERSION).debug $(DESTDIR)$(DEBUGDIR)/primeforge.debug \
	      $(DESTDIR)$(DEBUGDIR)/primeforge.so.debug \
	      $(DESTDIR)$(BINDIR)/primeforge $(DESTDIR)$(MANDIR)/man1/primeforge.1 \
	      $(DESTDIR)$(MANDIR)/man1/primeforge-*.1 \
	      $(DESTDIR)$(DATADIR)/bash-completion/completions/primeforge \
	      $(DESTDIR)$(DATADIR)/zsh/site-functions/_primeforge \
	      $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/primeforge.fish
	rm -rf $(DESTDIR)$(DATADIR)/doc/primeforge
	rm -f $(DESTDIR)$(MODULESDIR)/primeforge.so

.PHONY: all install uninstall private-archive

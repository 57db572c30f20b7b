/*
 * tls_dhe_server.c: primeforge keys in a real TLS handshake.
 *
 * Generates an RSA key and DH parameters with primeforge, loads them into
 * OpenSSL, makes a self-signed certificate in memory, and completes a
 * TLS 1.2 DHE-RSA handshake with an OpenSSL client over a socketpair in
 * this process, then sends a message each way.
 *
 *   tls_dhe_server [THREADS [RSA_BITS [DH_BITS]]]   (defaults: 0 = all cores, 2048, 2048)
 *
 * Link with -lprimeforge -lssl -lcrypto.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "primeforge.h"

static int die(const char *what) {
    fprintf(stderr, "tls_dhe_server: %s\n", what);
    ERR_print_errors_fp(stderr);
    return 1;
}

/* The private key: PKCS#8 DER from a secure buffer, parsed by OpenSSL. */
static EVP_PKEY *load_key(pf_rsa_key *key) {
    pf_buffer *der = NULL;
    if (pf_rsa_export(key, PF_FORMAT_PKCS8_DER, &der) != PF_OK) return NULL;
    const unsigned char *p = pf_buffer_data(der);
    EVP_PKEY *pkey = d2i_AutoPrivateKey(NULL, &p, (long)pf_buffer_len(der));
    pf_buffer_free(der); /* wiped */
    return pkey;
}

/* DH parameters: PKCS#3 PEM read with PEM_read_bio_Parameters. */
static EVP_PKEY *load_dh(pf_dh_params *dh) {
    pf_buffer *pem = NULL;
    if (pf_dh_export(dh, PF_FORMAT_PKCS3_PEM, &pem) != PF_OK) return NULL;
    BIO *bio = BIO_new_mem_buf(pf_buffer_data(pem), (int)pf_buffer_len(pem));
    EVP_PKEY *params = bio ? PEM_read_bio_Parameters(bio, NULL) : NULL;
    BIO_free(bio);
    pf_buffer_free(pem);
    return params;
}

static X509 *self_signed(EVP_PKEY *pkey) {
    X509 *x = X509_new();
    if (!x) return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
                               -1, 0);
    X509_set_issuer_name(x, name);
    if (!X509_sign(x, pkey, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* Drives both ends of a non-blocking handshake until both are done. */
static int handshake(SSL *server, SSL *client) {
    int s_done = 0, c_done = 0;
    for (int i = 0; i < 10000 && !(s_done && c_done); i++) {
        if (!c_done) {
            int r = SSL_do_handshake(client);
            if (r == 1) c_done = 1;
            else {
                int e = SSL_get_error(client, r);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return 0;
            }
        }
        if (!s_done) {
            int r = SSL_do_handshake(server);
            if (r == 1) s_done = 1;
            else {
                int e = SSL_get_error(server, r);
                if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return 0;
            }
        }
    }
    return s_done && c_done;
}

static int transfer(SSL *from, SSL *to, const char *msg) {
    size_t len = strlen(msg);
    if (SSL_write(from, msg, (int)len) != (int)len) return 0;
    char buf[256];
    int got = 0;
    for (int i = 0; i < 10000 && got < (int)len; i++) {
        int r = SSL_read(to, buf + got, (int)sizeof buf - 1 - got);
        if (r > 0) got += r;
        else if (SSL_get_error(to, r) != SSL_ERROR_WANT_READ) return 0;
    }
    buf[got] = '\0';
    return got == (int)len && strcmp(buf, msg) == 0;
}

int main(int argc, char **argv) {
    uint32_t threads = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 0;
    uint32_t rsa_bits = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 2048;
    uint32_t dh_bits = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 2048;

    pf_rsa_key *key = NULL;
    pf_dh_params *dh = NULL;
    pf_status st = pf_rsa_generate(rsa_bits, threads, &key);
    if (st != PF_OK) return die(pf_status_str(st));
    st = pf_dh_generate(dh_bits, 2, threads, &dh);
    if (st != PF_OK) return die(pf_status_str(st));

    EVP_PKEY *pkey = load_key(key);
    EVP_PKEY *params = load_dh(dh);
    pf_rsa_free(key);
    pf_dh_free(dh);
    if (!pkey || !params) return die("loading primeforge output into OpenSSL");
    X509 *cert = self_signed(pkey);
    if (!cert) return die("self-signed certificate");

    SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    if (!sctx || !cctx) return die("SSL_CTX_new");
    /* Level 1 so that small sizes passed on the command line are allowed. */
    SSL_CTX_set_security_level(sctx, 1);
    SSL_CTX_set_security_level(cctx, 1);
    SSL_CTX_set_min_proto_version(sctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(sctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
    if (!SSL_CTX_set_cipher_list(sctx, "DHE-RSA-AES128-GCM-SHA256") ||
        !SSL_CTX_set_cipher_list(cctx, "DHE-RSA-AES128-GCM-SHA256"))
        return die("cipher list");
    if (!SSL_CTX_use_certificate(sctx, cert) || !SSL_CTX_use_PrivateKey(sctx, pkey) ||
        !SSL_CTX_check_private_key(sctx))
        return die("installing the key and certificate");
    if (!SSL_CTX_set0_tmp_dh_pkey(sctx, params)) return die("SSL_CTX_set0_tmp_dh_pkey");
    params = NULL; /* owned by the context now */

    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return die("socketpair");
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    SSL *server = SSL_new(sctx);
    SSL *client = SSL_new(cctx);
    SSL_set_fd(server, fds[0]);
    SSL_set_fd(client, fds[1]);
    SSL_set_accept_state(server);
    SSL_set_connect_state(client);
    if (!handshake(server, client)) return die("handshake");

    const char *cipher = SSL_get_cipher_name(server);
    int dh_size = 0;
    EVP_PKEY *peer_tmp = NULL;
    if (SSL_get_peer_tmp_key(client, &peer_tmp)) {
        dh_size = EVP_PKEY_get_bits(peer_tmp);
        EVP_PKEY_free(peer_tmp);
    }
    if (!transfer(client, server, "hello from the client") ||
        !transfer(server, client, "hello from the server"))
        return die("application data");
    printf("tls_dhe_server: %s, %s, DH %d bits, RSA %u bits: ok\n", SSL_get_version(server), cipher,
           dh_size, rsa_bits);

    SSL_shutdown(client);
    SSL_shutdown(server);
    SSL_free(server);
    SSL_free(client);
    close(fds[0]);
    close(fds[1]);
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
    X509_free(cert);
    EVP_PKEY_free(pkey);
    return 0;
}

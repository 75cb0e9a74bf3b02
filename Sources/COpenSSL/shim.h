// OpenSSL (Debian's libssl-dev, 3.x) for ReactiveUVTLS.
//
// Why the inline functions: several of OpenSSL's calls are function-like macros over
// SSL_ctrl / SSL_CTX_ctrl (the SNI name, the protocol floor, modes), which Swift cannot
// import. Each wrapper below is one such macro, nothing more.
#ifndef RUV_COPENSSL_SHIM_H
#define RUV_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>

/// SSL_set_tlsext_host_name: the server name sent in the ClientHello (SNI).
static inline long ruvtls_set_server_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

/// SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION): no SSLv3, TLS 1.0 or 1.1.
static inline long ruvtls_ctx_require_tls12(SSL_CTX *ctx) {
    return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/// SSL_CTX_set_mode: free idle buffers (many idle connections), and let a retried write
/// come from another buffer address (our plaintext arrays move).
static inline long ruvtls_ctx_set_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// BIO_set_mem_eof_return(bio, -1): an empty memory BIO means "retry later" (more bytes
/// will come from the socket), not end of file.
static inline long ruvtls_bio_retry_when_empty(BIO *bio) {
    return BIO_set_mem_eof_return(bio, -1);
}

/// XN_FLAG_ONELINE (an expression macro): print a name as `CN = localhost, O = ...`.
static inline unsigned long ruvtls_name_flags_oneline(void) {
    return XN_FLAG_ONELINE;
}

#endif

#include "tests/support/test_certs.h"

#include <openssl/conf.h>  // before x509v3.h, which declares the nconf functions under it
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <stdexcept>

namespace koord::test {
// Named, not anonymous: the Impl below holds its types, and a unity build would refuse
// a member of a type with internal linkage (-Wsubobject-linkage).
namespace certs_impl {

struct OpenSslFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using CertPtr = std::unique_ptr<X509, OpenSslFree>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, OpenSslFree>;

[[noreturn]] void openSslFailed(const std::string& what) {
  char reason[256] = "unknown error";
  if (const unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, reason, sizeof reason);
  throw std::runtime_error("test certificates: " + what + ": " + reason);
}

struct Identity {
  KeyPtr key;
  CertPtr cert;
};

enum class Role { kCa, kServer, kClient };

void addExtension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    openSslFailed(std::string("extension ") + OBJ_nid2sn(nid) + "=" + value);
  }
}

// Self-signed when role is kCa, else signed by issuer.
Identity makeIdentity(const std::string& commonName, Role role, const Identity* issuer) {
  Identity id{KeyPtr(EVP_EC_gen("P-256")), CertPtr(X509_new())};
  if (!id.key || !id.cert) openSslFailed("EC key for " + commonName);
  X509* cert = id.cert.get();
  uint64_t serial = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&serial), sizeof serial) != 1) {
    openSslFailed("serial");
  }
  X509_NAME* subject = X509_get_subject_name(cert);
  const bool ok = X509_set_version(cert, X509_VERSION_3) == 1 &&
                  ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), serial >> 1) == 1 &&
                  X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nullptr &&  // clock skew
                  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600) != nullptr &&
                  X509_NAME_add_entry_by_txt(
                      subject, "CN", MBSTRING_ASC,
                      reinterpret_cast<const unsigned char*>(commonName.c_str()), -1, -1, 0) == 1 &&
                  X509_set_issuer_name(
                      cert, issuer ? X509_get_subject_name(issuer->cert.get()) : subject) == 1 &&
                  X509_set_pubkey(cert, id.key.get()) == 1;
  if (!ok) openSslFailed("certificate fields for " + commonName);

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer->cert.get() : cert, cert, nullptr, nullptr, 0);
  addExtension(cert, &ctx, NID_subject_key_identifier, "hash");
  if (role == Role::kCa) {
    addExtension(cert, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert, &ctx, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert, &ctx, NID_key_usage, "critical,digitalSignature");
    if (role == Role::kServer) {
      addExtension(cert, &ctx, NID_ext_key_usage, "serverAuth");
      addExtension(cert, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    } else {
      addExtension(cert, &ctx, NID_ext_key_usage, "clientAuth");
    }
    addExtension(cert, &ctx, NID_authority_key_identifier, "keyid:always");
  }
  EVP_PKEY* signer = issuer ? issuer->key.get() : id.key.get();
  if (X509_sign(cert, signer, EVP_sha256()) <= 0) openSslFailed("signing " + commonName);
  return id;
}

template <typename WritePem>
std::string toPem(WritePem write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) openSslFailed("PEM encoding");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

PemPair pems(const Identity& id) {
  return {
      toPem([&](BIO* bio) { return PEM_write_bio_X509(bio, id.cert.get()); }), toPem([&](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, id.key.get(), nullptr, nullptr, 0, nullptr, nullptr);
      })};
}

}  // namespace certs_impl

using namespace certs_impl;

struct TestCa::Impl {
  Identity ca;
  std::string certPem;
};

TestCa::TestCa(const std::string& commonName) : impl_(std::make_unique<Impl>()) {
  impl_->ca = makeIdentity(commonName, Role::kCa, nullptr);
  impl_->certPem = pems(impl_->ca).cert;
}

TestCa::~TestCa() = default;

const std::string& TestCa::certPem() const { return impl_->certPem; }

PemPair TestCa::issueServer(const std::string& commonName) const {
  return pems(makeIdentity(commonName, Role::kServer, &impl_->ca));
}

PemPair TestCa::issueClient(const std::string& commonName) const {
  return pems(makeIdentity(commonName, Role::kClient, &impl_->ca));
}

}  // namespace koord::test

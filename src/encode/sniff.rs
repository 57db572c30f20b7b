//! The one reader of key and parameter files: what a file holds, found
//! the way OpenSSL finds it, for `primeforge check`, `pf_dh_check` and
//! every decoder.
//!
//! PEM is read leniently, as OpenSSL reads it: text before the first
//! `-----BEGIN` (an `openssl dhparam -text` dump, PKCS#12 "Bag Attributes",
//! comments), several blocks in one file (a certificate and key bundle: the
//! first private-key or parameters block is used, and its place is
//! reported), base64 lines of any length (64, 76, …), CRLF line ends,
//! blank lines and trailing text. DER is tried as each structure in turn.
//! Whatever is recognised but not checkable here (public keys, RSA-PSS
//! keys, encrypted keys, other algorithms, certificates) is an
//! [`Error::WrongKind`] naming it.
//!
//! Private-key bytes pass only through [`SecureBuf`]s: the base64 text is
//! gathered into one and decoded (constant-time, `base64ct`) into another.

use der::asn1::ObjectIdentifier;
use der::Decode;

use crate::error::{Error, Result};
use crate::secure::SecureBuf;

/// rsaEncryption (RFC 8017).
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// id-RSASSA-PSS (RFC 8017).
const RSASSA_PSS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");
/// id-ecPublicKey (RFC 5480).
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// id-Ed25519, id-Ed448, id-X25519, id-X448 (RFC 8410).
const CURVE_KEYS: [&str; 4] = ["1.3.101.112", "1.3.101.113", "1.3.101.110", "1.3.101.111"];
/// dhpublicnumber (X9.42) and dhKeyAgreement (PKCS#3).
const DH_KEYS: [&str; 2] = ["1.2.840.10046.2.1", "1.2.840.113549.1.3.1"];
/// id-dsa.
const DSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10040.4.1");

/// An RSA private key's container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// PKCS#1 RSAPrivateKey.
    Pkcs1,
    /// PKCS#8 PrivateKeyInfo with rsaEncryption.
    Pkcs8,
    /// PKCS#8 EncryptedPrivateKeyInfo (PBES2, PBES1 or PKCS#12's PBE),
    /// decrypted with a passphrase.
    EncryptedPkcs8,
    /// A PEM block with RFC 1421 encryption (`Proc-Type: 4,ENCRYPTED`,
    /// `DEK-Info`), decrypted with a passphrase.
    EncryptedPem,
    /// An OpenSSH private key ("OPENSSH PRIVATE KEY"), decrypted with its
    /// passphrase if it has one.
    OpenSsh,
}

impl Container {
    /// "PKCS#1" or "PKCS#8".
    pub fn name(self) -> &'static str {
        match self {
            Container::Pkcs1 => "PKCS#1",
            Container::Pkcs8 => "PKCS#8",
            Container::EncryptedPkcs8 => "encrypted PKCS#8",
            Container::EncryptedPem => "PEM-encrypted PKCS#1",
            Container::OpenSsh => "OpenSSH",
        }
    }
}

/// DH parameters' syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DhSyntax {
    /// PKCS#3 DHParameter (p, g).
    Pkcs3,
    /// X9.42 DomainParameters (p, g, q, optional j and validation data).
    X942,
    /// DSA Dss-Parms (p, q, g), "DSA PARAMETERS": FIPS 186-4 domain
    /// parameters, which X9.42 DH uses too.
    Dsa,
}

/// What a file holds that primeforge can check.
pub enum Content {
    /// An RSA private key: the PKCS#1 RSAPrivateKey DER (unwrapped from
    /// PKCS#8 when it came in one), in secure memory.
    RsaPrivate {
        /// The RSAPrivateKey DER.
        pkcs1: SecureBuf,
        /// How the file wrapped it.
        container: Container,
    },
    /// An RSA public key: the PKCS#1 RSAPublicKey DER (unwrapped from a
    /// SubjectPublicKeyInfo when it came in one).
    RsaPublic {
        /// The RSAPublicKey DER.
        pkcs1: Vec<u8>,
        /// True for SubjectPublicKeyInfo ("PUBLIC KEY"), false for PKCS#1
        /// ("RSA PUBLIC KEY").
        spki: bool,
    },
    /// An encrypted private key, found without a passphrase:
    /// [`sniff_with`] with one decrypts it.
    EncryptedKey {
        /// True for PEM encryption (`DEK-Info`) and OpenSSH keys, false for
        /// PKCS#8 EncryptedPrivateKeyInfo.
        legacy: bool,
    },
    /// DH parameters, as DER (public), and the syntax if the PEM label
    /// said it (DER is told apart by shape).
    Dh {
        /// The parameters' DER.
        der: Vec<u8>,
        /// The syntax, when a PEM label named it.
        syntax: Option<DhSyntax>,
    },
}

impl Sniffed {
    /// The content and the block it came from, apart.
    pub fn content_with_block(self) -> (Content, Option<(usize, usize)>) {
        (self.content, self.block)
    }
}

/// The content and where it was found.
pub struct Sniffed {
    /// What was found.
    pub content: Content,
    /// For PEM: the block used (1-based) and how many blocks the file has.
    pub block: Option<(usize, usize)>,
}

struct PemBlock<'a> {
    label: &'a str,
    /// RFC 1421 headers ("Proc-Type: 4,ENCRYPTED", "DEK-Info: …") before
    /// the base64, if any.
    headers: &'a [u8],
    /// Whether the headers say the body is encrypted.
    encrypted: bool,
    body: &'a [u8],
}

impl PemBlock<'_> {
    /// The value of header `name` (e.g. "DEK-Info").
    fn header(&self, name: &str) -> Option<&str> {
        std::str::from_utf8(self.headers)
            .ok()?
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
            })
    }
}

/// The longest PEM label read (OpenSSL's are under 40 characters).
const MAX_LABEL: usize = 80;

/// The label of a `-----BEGIN LABEL-----` or `-----END LABEL-----` marker
/// whose label starts at `from`: the text up to the next `-----`, on the
/// same line and at most [`MAX_LABEL`] bytes long, and the position after
/// the closing dashes.
fn marker_label(data: &[u8], from: usize) -> Option<(&str, usize)> {
    let rest = &data[from..data.len().min(from + MAX_LABEL + 5)];
    let end = rest.windows(5).position(|w| w == b"-----")?;
    let label = &rest[..end];
    if label.iter().any(|&c| c == b'\n' || c == b'\r') {
        return None;
    }
    Some((std::str::from_utf8(label).ok()?, from + end + 5))
}

/// Every well-formed `-----BEGIN X-----` … `-----END X-----` block, in order,
/// in one pass: each byte is looked at a bounded number of times, so the
/// time is linear in the input whatever it holds (a BEGIN with no END is
/// dropped when the next BEGIN opens another block, not searched past).
fn pem_blocks(data: &[u8]) -> Vec<PemBlock<'_>> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    const END: &[u8] = b"-----END ";
    let mut out = Vec::new();
    // The open block: its label and where its body starts.
    let mut open: Option<(&str, usize)> = None;
    let mut at = 0;
    while let Some(i) = data[at..].iter().position(|&c| c == b'-').map(|i| i + at) {
        let rest = &data[i..];
        let (is_begin, skip) = if rest.starts_with(BEGIN) {
            (true, BEGIN.len())
        } else if rest.starts_with(END) {
            (false, END.len())
        } else {
            at = i + 1;
            continue;
        };
        let Some((label, after)) = marker_label(data, i + skip) else {
            at = i + skip;
            continue;
        };
        at = after;
        if is_begin {
            open = Some((label, after));
        } else if let Some((open_label, body_start)) = open {
            if open_label == label {
                out.push(block(label, &data[body_start..i]));
                open = None;
            }
        }
    }
    out
}

/// A block's body with its RFC 1421 headers (lines with a colon, up to a
/// blank line) taken off.
fn block<'a>(label: &'a str, body: &'a [u8]) -> PemBlock<'a> {
    let mut body = body;
    let mut headers: &[u8] = &[];
    let mut encrypted = false;
    if body.iter().take(200).any(|&c| c == b':') {
        let blank = [&b"\n\n"[..], b"\r\n\r\n", b"\n\r\n"]
            .iter()
            .filter_map(|sep| {
                body.windows(sep.len())
                    .position(|w| w == *sep)
                    .map(|at| (at, sep.len()))
            })
            .min();
        if let Some((at, len)) = blank {
            headers = &body[..at];
            encrypted = headers.windows(9).any(|w| w == b"ENCRYPTED");
            body = &body[at + len..];
        }
    }
    PemBlock {
        label,
        headers,
        encrypted,
        body,
    }
}

/// Base64 of a PEM body (any line length, any line ends) into secure memory.
fn decode_body(body: &[u8]) -> Result<SecureBuf> {
    let mut text = SecureBuf::new(body.len())?;
    let mut n = 0;
    for &c in body {
        if !c.is_ascii_whitespace() {
            text.as_mut_slice()[n] = c;
            n += 1;
        }
    }
    let mut out = SecureBuf::new(n / 4 * 3 + 3)?;
    let len = {
        use base64ct::Encoding;
        base64ct::Base64::decode(&text.as_slice()[..n], out.as_mut_slice())
            .map_err(|_| Error::Decode)?
            .len()
    };
    SecureBuf::from_slice(&out.as_slice()[..len])
}

/// Labels that carry no key or parameters (skipped in bundles).
fn is_certificate_like(label: &str) -> bool {
    matches!(
        label,
        "CERTIFICATE"
            | "TRUSTED CERTIFICATE"
            | "X509 CERTIFICATE"
            | "X509 CRL"
            | "CERTIFICATE REQUEST"
            | "NEW CERTIFICATE REQUEST"
            | "PKCS7"
            | "CMS"
            | "ATTRIBUTE CERTIFICATE"
    )
}

/// What a private-key algorithm is, for the message.
fn name_algorithm(oid: ObjectIdentifier) -> &'static str {
    let s = oid.to_string();
    if oid == RSASSA_PSS {
        "an RSA-PSS private key (id-RSASSA-PSS); primeforge checks rsaEncryption keys"
    } else if oid == EC_PUBLIC_KEY {
        "an EC private key, not RSA"
    } else if CURVE_KEYS.contains(&s.as_str()) {
        "an Ed25519/Ed448/X25519/X448 private key, not RSA"
    } else if DH_KEYS.contains(&s.as_str()) {
        "a DH private key; check its parameters instead"
    } else if oid == DSA {
        "a DSA private key, not RSA"
    } else {
        "a private key of an algorithm other than RSA"
    }
}

/// A PKCS#8 PrivateKeyInfo with rsaEncryption, unwrapped to PKCS#1.
fn from_pkcs8(der: &[u8]) -> Result<SecureBuf> {
    let info = pkcs8::PrivateKeyInfoRef::from_der(der).map_err(|_| Error::Decode)?;
    if info.algorithm.oid != RSA_ENCRYPTION {
        return Err(Error::WrongKind(name_algorithm(info.algorithm.oid)));
    }
    SecureBuf::from_slice(info.private_key.as_bytes())
}

fn is_rsa_public(der: &[u8]) -> bool {
    pkcs1::RsaPublicKey::<der::asn1::UintRef<'_>>::from_der(der).is_ok()
}

/// Bare DER SEQUENCE { INTEGER, INTEGER } is both PKCS#3 DHParameter
/// {p, g} and PKCS#1 RSAPublicKey {n, e}. It is DH when the second number
/// is even (g = 2; an RSA exponent is odd) or the first is prime (p; an
/// RSA modulus is composite), or when it is too large to judge (the DH
/// checker then reports the size). Public values only: GMP's own
/// probable-prime test is enough to tell them apart.
fn pkcs3_shaped(der: &[u8]) -> bool {
    let Ok(k) = pkcs1::RsaPublicKey::<der::asn1::UintRef<'_>>::from_der(der) else {
        return false;
    };
    let first = k.modulus.as_bytes();
    let second = k.public_exponent.as_bytes();
    if second.last().is_none_or(|b| b & 1 == 0) || first.len() > 2048 {
        return true;
    }
    let n = rug::Integer::from_digits(first, rug::integer::Order::Msf);
    n.is_probably_prime(2) != rug::integer::IsPrime::No
}

/// A SubjectPublicKeyInfo: an rsaEncryption key is unwrapped to PKCS#1;
/// other algorithms are named.
fn from_spki(der: &[u8]) -> Result<Content> {
    let info = spki::SubjectPublicKeyInfoRef::from_der(der).map_err(|_| Error::Decode)?;
    if info.algorithm.oid == RSASSA_PSS {
        return Err(Error::WrongKind(
            "an RSA-PSS public key (id-RSASSA-PSS); primeforge checks rsaEncryption keys",
        ));
    }
    if info.algorithm.oid != RSA_ENCRYPTION {
        return Err(Error::WrongKind(
            "a public key of an algorithm other than RSA",
        ));
    }
    let pkcs1 = info
        .subject_public_key
        .as_bytes()
        .ok_or(Error::Decode)?
        .to_vec();
    if !is_rsa_public(&pkcs1) {
        return Err(Error::Decode);
    }
    Ok(Content::RsaPublic { pkcs1, spki: true })
}

fn is_rsa_private(der: &[u8]) -> bool {
    pkcs1::RsaPrivateKey::<der::asn1::UintRef<'_>>::from_der(der).is_ok()
}

/// SEQUENCE { AlgorithmIdentifier, OCTET STRING }: PKCS#8
/// EncryptedPrivateKeyInfo.
fn is_encrypted_pkcs8(der: &[u8]) -> bool {
    use der::{Reader, SliceReader, Tag, Tagged};
    let Ok(mut r) = SliceReader::new(der) else {
        return false;
    };
    let Ok(outer) = der::asn1::AnyRef::decode(&mut r) else {
        return false;
    };
    if r.finish().is_err() || outer.tag() != Tag::Sequence {
        return false;
    }
    let Ok(mut inner) = SliceReader::new(outer.value()) else {
        return false;
    };
    let alg = der::asn1::AnyRef::decode(&mut inner);
    let data = der::asn1::AnyRef::decode(&mut inner);
    matches!((alg, data), (Ok(a), Ok(d)) if a.tag() == Tag::Sequence
        && d.tag() == Tag::OctetString && inner.is_finished())
}

/// The tags of the items of an outer SEQUENCE that spans all of `der`.
fn sequence_tags(der: &[u8]) -> Option<Vec<der::Tag>> {
    use der::{Reader, SliceReader, Tagged};
    let mut r = SliceReader::new(der).ok()?;
    let outer = der::asn1::AnyRef::decode(&mut r).ok()?;
    r.finish().ok()?;
    if outer.tag() != der::Tag::Sequence {
        return None;
    }
    let mut inner = SliceReader::new(outer.value()).ok()?;
    let mut tags = Vec::new();
    while !inner.is_finished() {
        tags.push(der::asn1::AnyRef::decode(&mut inner).ok()?.tag());
    }
    Some(tags)
}

/// DER structures recognised by shape that hold no RSA private key or DH
/// parameters: an X.509 certificate or CRL, a SEC 1 EC private key, a
/// PKCS#7/CMS message.
fn other_der_kind(der: &[u8]) -> Option<&'static str> {
    use der::Tag;
    let tags = sequence_tags(der)?;
    let ctx0 = |t: &Tag| matches!(t, Tag::ContextSpecific { number, .. } if number.value() == 0);
    match tags.as_slice() {
        [Tag::Sequence, Tag::Sequence, Tag::BitString] => {
            Some("a certificate or CRL (X.509), with no private key or DH parameters")
        }
        [Tag::Integer, Tag::OctetString, rest @ ..]
            if rest
                .iter()
                .all(|t| matches!(t, Tag::ContextSpecific { .. })) =>
        {
            Some("an EC private key (SEC 1), not RSA")
        }
        [Tag::ObjectIdentifier, t] if ctx0(t) => {
            Some("a PKCS#7/CMS message, with no private key or DH parameters")
        }
        _ => None,
    }
}

fn is_spki(der: &[u8]) -> Option<ObjectIdentifier> {
    spki::SubjectPublicKeyInfoRef::from_der(der)
        .ok()
        .map(|s| s.algorithm.oid)
}

/// Reads one PEM block by its label; `Ok(None)` for blocks that hold no key
/// or parameters (certificates).
fn from_block(b: &PemBlock<'_>, pass: Option<&[u8]>) -> Result<Option<Content>> {
    if is_certificate_like(b.label) {
        return Ok(None);
    }
    if b.encrypted {
        return from_encrypted_pem(b, pass).map(Some);
    }
    match b.label {
        // As OpenSSL reads them: PKCS#1 or PKCS#8 under either label.
        "RSA PRIVATE KEY" | "PRIVATE KEY" => {
            let der = decode_body(b.body)?;
            if is_rsa_private(der.as_slice()) {
                return Ok(Some(Content::RsaPrivate {
                    pkcs1: der,
                    container: Container::Pkcs1,
                }));
            }
            let pkcs1 = from_pkcs8(der.as_slice())?;
            if !is_rsa_private(pkcs1.as_slice()) {
                return Err(Error::Decode);
            }
            Ok(Some(Content::RsaPrivate {
                pkcs1,
                container: Container::Pkcs8,
            }))
        }
        "DH PARAMETERS" | "X9.42 DH PARAMETERS" => {
            let der = decode_body(b.body)?;
            let syntax = if b.label == "DH PARAMETERS" {
                DhSyntax::Pkcs3
            } else {
                DhSyntax::X942
            };
            Ok(Some(Content::Dh {
                der: der.as_slice().to_vec(),
                syntax: Some(syntax),
            }))
        }
        "ENCRYPTED PRIVATE KEY" => {
            let der = decode_body(b.body)?;
            from_encrypted(der.as_slice(), pass).map(Some)
        }
        "PUBLIC KEY" => {
            let der = decode_body(b.body)?;
            from_spki(der.as_slice()).map(Some)
        }
        "RSA PUBLIC KEY" => {
            let der = decode_body(b.body)?;
            if !is_rsa_public(der.as_slice()) {
                return Err(Error::Decode);
            }
            Ok(Some(Content::RsaPublic {
                pkcs1: der.as_slice().to_vec(),
                spki: false,
            }))
        }
        "EC PRIVATE KEY" => Err(Error::WrongKind("an EC private key, not RSA")),
        "DSA PRIVATE KEY" => Err(Error::WrongKind("a DSA private key, not RSA")),
        "OPENSSH PRIVATE KEY" => {
            let bytes = decode_body(b.body)?;
            super::openssh::read(bytes.as_slice(), pass).map(Some)
        }
        "DSA PARAMETERS" => {
            let der = decode_body(b.body)?;
            Ok(Some(Content::Dh {
                der: der.as_slice().to_vec(),
                syntax: Some(DhSyntax::Dsa),
            }))
        }
        "EC PARAMETERS" => Err(Error::WrongKind("EC parameters, not DH parameters")),
        _ => Err(Error::Decode),
    }
}

/// A PEM block with RFC 1421 encryption: without `pass`, as found; with
/// it, decrypted (a wrong one: [`Error::Passphrase`]) and read by its label.
fn from_encrypted_pem(b: &PemBlock<'_>, pass: Option<&[u8]>) -> Result<Content> {
    if !matches!(b.label, "RSA PRIVATE KEY" | "PRIVATE KEY") {
        return from_block(
            &PemBlock {
                encrypted: false,
                ..*b
            },
            None,
        )?
        .ok_or(Error::Decode);
    }
    let dek_info = b.header("DEK-Info").ok_or(Error::WrongKind(
        "an encrypted PEM block without its DEK-Info header",
    ))?;
    let Some(pass) = pass else {
        return Ok(Content::EncryptedKey { legacy: true });
    };
    let ciphertext = decode_body(b.body)?;
    let der = super::decrypt::decrypt_pem(dek_info, ciphertext.as_slice(), pass)?;
    // A wrong passphrase that still unpads cleanly gives garbage.
    if is_rsa_private(der.as_slice()) {
        return Ok(Content::RsaPrivate {
            pkcs1: der,
            container: Container::EncryptedPem,
        });
    }
    match from_pkcs8(der.as_slice()) {
        Ok(pkcs1) if is_rsa_private(pkcs1.as_slice()) => Ok(Content::RsaPrivate {
            pkcs1,
            container: Container::EncryptedPem,
        }),
        Err(e @ Error::WrongKind(_)) => Err(e),
        _ => Err(Error::Passphrase),
    }
}

/// An EncryptedPrivateKeyInfo: without `pass`, as found; with it,
/// decrypted (a wrong one: [`Error::Passphrase`]) and unwrapped to PKCS#1.
fn from_encrypted(der: &[u8], pass: Option<&[u8]>) -> Result<Content> {
    let Some(pass) = pass else {
        if !super::decrypt::is_encrypted_private_key_info(der) {
            return Err(Error::Decode);
        }
        return Ok(Content::EncryptedKey { legacy: false });
    };
    let info = super::decrypt::decrypt_pkcs8(der, pass)?;
    let pkcs1 = from_pkcs8(info.as_slice())?;
    if !is_rsa_private(pkcs1.as_slice()) {
        return Err(Error::Decode);
    }
    Ok(Content::RsaPrivate {
        pkcs1,
        container: Container::EncryptedPkcs8,
    })
}

/// Finds the RSA private key or DH parameters in `data` (PEM or DER); an
/// encrypted PKCS#8 key needs [`sniff_with`].
pub fn sniff(data: &[u8]) -> Result<Sniffed> {
    sniff_with(data, None)
}

/// [`sniff`], decrypting an encrypted PKCS#8 key with `passphrase`.
pub fn sniff_with(data: &[u8], passphrase: Option<&[u8]>) -> Result<Sniffed> {
    let blocks = pem_blocks(data);
    if !blocks.is_empty() {
        let total = blocks.len();
        // The first block with a key or parameters that can be checked;
        // failing that, the first block's reason.
        let mut first_err = None;
        for (i, b) in blocks.iter().enumerate() {
            match from_block(b, passphrase) {
                Ok(Some(content)) => {
                    return Ok(Sniffed {
                        content,
                        block: Some((i + 1, total)),
                    })
                }
                Ok(None) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        return Err(first_err.unwrap_or(Error::WrongKind(
            "certificates only: no private key or DH parameters",
        )));
    }
    if data.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(Error::WrongKind(
            "PEM with no complete block: a -----BEGIN line without its matching -----END line",
        ));
    }
    from_der(data, passphrase).map(|content| Sniffed {
        content,
        block: None,
    })
}

/// DER: PKCS#8, PKCS#1 private, then the recognised kinds we do not check,
/// then DH parameters.
fn from_der(der: &[u8], pass: Option<&[u8]>) -> Result<Content> {
    match from_pkcs8(der) {
        Ok(pkcs1) if is_rsa_private(pkcs1.as_slice()) => {
            return Ok(Content::RsaPrivate {
                pkcs1,
                container: Container::Pkcs8,
            })
        }
        Err(e @ Error::WrongKind(_)) => return Err(e),
        _ => {}
    }
    if is_rsa_private(der) {
        return Ok(Content::RsaPrivate {
            pkcs1: SecureBuf::from_slice(der)?,
            container: Container::Pkcs1,
        });
    }
    if is_spki(der).is_some() {
        return from_spki(der);
    }
    if is_rsa_public(der) && !pkcs3_shaped(der) {
        return Ok(Content::RsaPublic {
            pkcs1: der.to_vec(),
            spki: false,
        });
    }
    if is_encrypted_pkcs8(der) {
        return from_encrypted(der, pass);
    }
    if let Some(what) = other_der_kind(der) {
        return Err(Error::WrongKind(what));
    }
    if dh_shaped(der) {
        return Ok(Content::Dh {
            der: der.to_vec(),
            syntax: None,
        });
    }
    Err(Error::WrongKind(unrecognised(der)))
}

/// DER that can be DH parameters: a SEQUENCE of two or three INTEGERs
/// (PKCS#3 DHParameter, with the optional privateValueLength) or X9.42
/// DomainParameters (p, g, q, then an optional INTEGER j and an optional
/// ValidationParms SEQUENCE).
fn dh_shaped(der: &[u8]) -> bool {
    use der::Tag::{Integer, Sequence};
    matches!(
        sequence_tags(der).as_deref(),
        Some([Integer, Integer])
            | Some([Integer, Integer, Integer])
            | Some([Integer, Integer, Integer, Integer])
            | Some([Integer, Integer, Integer, Sequence])
            | Some([Integer, Integer, Integer, Integer, Sequence])
    )
}

/// PKCS#12's PFX: SEQUENCE { version INTEGER 3, authSafe ContentInfo, … }.
fn pkcs12_shaped(der: &[u8]) -> bool {
    use der::{SliceReader, Tagged};
    let Ok(mut r) = SliceReader::new(der) else {
        return false;
    };
    let Ok(outer) = der::asn1::AnyRef::decode(&mut r) else {
        return false;
    };
    let Ok(mut inner) = SliceReader::new(outer.value()) else {
        return false;
    };
    let (Ok(version), Ok(auth_safe)) = (
        der::asn1::AnyRef::decode(&mut inner),
        der::asn1::AnyRef::decode(&mut inner),
    ) else {
        return false;
    };
    outer.tag() == der::Tag::Sequence
        && version.tag() == der::Tag::Integer
        && version.value() == [3]
        && auth_safe.tag() == der::Tag::Sequence
}

/// What input that is neither PEM nor a DER structure primeforge reads
/// looks like, for the message.
fn unrecognised(data: &[u8]) -> &'static str {
    let text = data
        .iter()
        .all(|&c| c.is_ascii_graphic() || c.is_ascii_whitespace() || c >= 0x80)
        && std::str::from_utf8(data).is_ok();
    let starts = |p: &[u8]| data.trim_ascii_start().starts_with(p);
    if data.is_empty() {
        "empty input: no key or DH parameters"
    } else if starts(b"ssh-") || starts(b"ecdsa-sha2-") || starts(b"sk-") {
        "an OpenSSH public key line, not a private key or DH parameters"
    } else if pkcs12_shaped(data) {
        "a PKCS#12 file: take the key out first (openssl pkcs12 -nocerts -nodes -in FILE)"
    } else if text {
        "text with no PEM block (no -----BEGIN line): not a key or DH parameters"
    } else if sequence_tags(data).is_some() {
        "a DER structure that is not a key or DH parameters primeforge reads"
    } else {
        "neither PEM nor DER: not a key or DH parameters"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_with_text_around_them() {
        let data = b"Bag Attributes\n    localKeyID: 01\nsubject=/CN=x\n-----BEGIN CERTIFICATE-----\r\nAAAA\r\n-----END CERTIFICATE-----\r\nnoise\n-----BEGIN DH PARAMETERS-----\nMAYCAQcCAQI=\n-----END DH PARAMETERS-----\n\n\n";
        let b = pem_blocks(data);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].label, "CERTIFICATE");
        assert_eq!(b[1].label, "DH PARAMETERS");
        let s = sniff(data).unwrap();
        assert_eq!(s.block, Some((2, 2)));
        match s.content {
            Content::Dh { der, syntax } => {
                assert_eq!(syntax, Some(DhSyntax::Pkcs3));
                assert_eq!(der, [0x30, 6, 2, 1, 7, 2, 1, 2]);
            }
            _ => panic!("not DH"),
        }
    }

    /// A BEGIN with no END, over and over, does not make the scan search
    /// past each one to the end of the input (it did: 177 s for 1 MB);
    /// blocks around such lines are still found.
    #[test]
    fn unterminated_blocks_do_not_hide_later_ones() {
        let mut data = b"-----BEGIN A-----\n".repeat(1000);
        data.extend_from_slice(
            b"-----BEGIN DH PARAMETERS-----\nMAYCAQcCAQI=\n-----END DH PARAMETERS-----\n",
        );
        data.extend_from_slice(&b"-----BEGIN B-----\n-----END A-----\n".repeat(100));
        let b = pem_blocks(&data);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].label, "DH PARAMETERS");
        // Markers whose label never closes, or spans lines, are not blocks.
        for odd in [
            &b"-----BEGIN "[..],
            b"-----BEGIN A\n-----\n-----END A-----",
            b"----------------------------------",
            b"-----END X----------BEGIN X-----",
        ] {
            assert!(
                pem_blocks(odd).is_empty(),
                "{:?}",
                String::from_utf8_lossy(odd)
            );
        }
        let long = [
            b"-----BEGIN ".as_slice(),
            &[b'A'; 100],
            b"-----\nAA\n-----END ",
        ]
        .concat();
        assert!(pem_blocks(&long).is_empty(), "a label over 80 bytes");
    }

    /// Input that holds no key or DH parameters is named for what it is,
    /// never called DH parameters (it was, for anything unrecognised).
    #[test]
    fn unrecognised_input_is_named() {
        let named = |data: &[u8]| match sniff(data) {
            Err(Error::WrongKind(m)) => m,
            Err(e) => panic!("{e:?} for {:?}", String::from_utf8_lossy(data)),
            Ok(s) => panic!(
                "{:?} read as {}",
                String::from_utf8_lossy(data),
                match s.content {
                    Content::Dh { .. } => "DH parameters",
                    Content::RsaPrivate { .. } => "an RSA private key",
                    Content::RsaPublic { .. } => "an RSA public key",
                    Content::EncryptedKey { .. } => "an encrypted key",
                }
            ),
        };
        assert!(named(b"").contains("empty"));
        assert!(named(b"root:x:0:0:root:/root:/bin/bash\n").contains("text"));
        assert!(
            named(b"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ== me@host\n").contains("OpenSSH public")
        );
        let random: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        assert!(named(&random).contains("neither PEM nor DER"));
        // PFX: SEQUENCE { INTEGER 3, SEQUENCE { OID data, … } }.
        let pfx = [
            0x30, 0x0a, 0x02, 0x01, 0x03, 0x30, 0x05, 0x06, 0x03, 0x2a, 0x03, 0x04,
        ];
        assert!(named(&pfx).contains("PKCS#12"));
        // Some other SEQUENCE.
        assert!(named(&[0x30, 0x03, 0x01, 0x01, 0xff]).contains("DER structure"));
        assert!(named(b"-----BEGIN DH PARAMETERS-----\nMAYCAQcCAQI=\n").contains("END"));
        // DH parameters in DER are still DH parameters.
        assert!(matches!(
            sniff(&[0x30, 6, 2, 1, 7, 2, 1, 2]).map(|s| s.content),
            Ok(Content::Dh { .. })
        ));
    }

    #[test]
    fn kinds_we_do_not_check_are_named() {
        let pem = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
        match sniff(pem.as_bytes()) {
            Err(Error::WrongKind(m)) => assert!(m.contains("EC"), "{m}"),
            other => panic!("EC: {:?}", other.map(|_| ())),
        }
        // An encrypted PKCS#8 block must at least be EncryptedPrivateKeyInfo.
        let enc =
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(matches!(sniff(enc), Err(Error::Decode)));
        let legacy = b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        assert!(matches!(
            sniff(legacy).map(|s| s.content),
            Ok(Content::EncryptedKey { legacy: true })
        ));
        let certs = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(matches!(sniff(certs), Err(Error::WrongKind(m)) if m.contains("certificates")));
        assert!(matches!(
            sniff(b"-----BEGIN DH PARAMETERS-----\nMAYCAQcCAQI=\n"),
            Err(Error::WrongKind(m)) if m.contains("-----END")
        ));
    }
}

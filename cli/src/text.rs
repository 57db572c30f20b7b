//! `--text`: a human-readable dump in the layout of `openssl pkey -text`
//! and `openssl dhparam -text`, so that people and scripts that read those
//! read ours.

use primeforge::dh::{DhParams, DhPart};
use primeforge::rsa::RsaKey;

/// A big-endian number as OpenSSL prints it: colon-separated hex bytes, a
/// leading 00 when the top bit is set, 15 bytes per line, each line
/// indented by `indent` spaces.
fn hex_block(out: &mut String, bytes: &[u8], indent: usize) {
    let mut v = Vec::with_capacity(bytes.len() + 1);
    let trimmed: &[u8] = {
        let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
        &bytes[start..]
    };
    if trimmed.first().is_none_or(|&b| b & 0x80 != 0) {
        v.push(0);
    }
    v.extend_from_slice(trimmed);
    let lines: Vec<String> = v
        .chunks(15)
        .map(|c| {
            c.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        })
        .collect();
    for (i, l) in lines.iter().enumerate() {
        out.push_str(&" ".repeat(indent));
        out.push_str(l);
        if i + 1 < lines.len() {
            out.push(':');
        }
        out.push('\n');
    }
}

/// A field that is small: "name:    2 (0x2)" (OpenSSL's spacing for DH);
/// else a hex block.
fn field(out: &mut String, name: &str, bytes: &[u8], indent: usize, block_indent: usize) {
    let trimmed: Vec<u8> = bytes.iter().copied().skip_while(|&b| b == 0).collect();
    if trimmed.len() <= 8 {
        let v = trimmed.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        out.push_str(&format!("{}{name}:    {v} (0x{v:x})\n", " ".repeat(indent)));
    } else {
        out.push_str(&format!("{}{name}:\n", " ".repeat(indent)));
        hex_block(out, &trimmed, block_indent);
    }
}

/// `openssl pkey -text -noout` for an RSA private key.
pub fn rsa(key: &RsaKey) -> String {
    let mut s = format!(
        "Private-Key: ({} bit, {} primes)\n",
        key.bits(),
        key.prime_count()
    );
    s.push_str("modulus:\n");
    hex_block(&mut s, key.n(), 4);
    let e = key.public_exponent();
    s.push_str(&format!("publicExponent: {e} (0x{e:x})\n"));
    for (name, v) in [
        ("privateExponent", key.d()),
        ("prime1", key.p()),
        ("prime2", key.q()),
        ("exponent1", key.dp()),
        ("exponent2", key.dq()),
        ("coefficient", key.qinv()),
    ] {
        s.push_str(&format!("{name}:\n"));
        hex_block(&mut s, v, 4);
    }
    for (i, o) in key.other_primes().iter().enumerate() {
        let k = i + 3;
        for (name, v) in [("prime", o.r), ("exponent", o.d), ("coefficient", o.t)] {
            s.push_str(&format!("{name}{k}:\n"));
            hex_block(&mut s, v, 4);
        }
    }
    s
}

/// `openssl dhparam -text -noout` (PKCS#3) or `openssl pkeyparam -text`
/// (X9.42, with Q).
pub fn dh(params: &DhParams, x942: bool) -> String {
    let mut s = format!("    DH Parameters: ({} bit)\n", params.bits());
    // A published group is named, as OpenSSL 3 names it, instead of listed.
    if !x942 {
        if let Some(g) = primeforge::dh::named::group_of(params.p(), params.g()) {
            s.push_str(&format!("    GROUP: {}\n", g.name()));
            return s;
        }
    }
    let part = |p| params.part_bytes(p).unwrap_or_default();
    s.push_str("    P:   \n");
    hex_block(&mut s, &part(DhPart::P), 8);
    if x942 {
        if let Some(q) = params.part_bytes(DhPart::Q) {
            s.push_str("    Q:   \n");
            hex_block(&mut s, &q, 8);
        }
    }
    field(&mut s, "G", &part(DhPart::G), 4, 8);
    s
}

/// FIPS 186-4 parameters as `openssl pkeyparam -text` prints DSA and
/// DHX parameters (P, Q, G, then SEED and pcounter), with the hash and g's
/// method, which no file format carries.
pub fn ffc(params: &DhParams) -> String {
    let part = |p| params.part_bytes(p).unwrap_or_default();
    let mut s = format!("    Parameters: ({} bit)\n", params.bits());
    for (name, p) in [("P", DhPart::P), ("Q", DhPart::Q), ("G", DhPart::G)] {
        s.push_str(&format!("    {name}:   \n"));
        hex_block(&mut s, &part(p), 8);
    }
    if let Some(v) = params.fips186() {
        s.push_str("    SEED:\n");
        hex_block(&mut s, &v.seed, 8);
        s.push_str(&format!("    pcounter: {}\n", v.counter));
        if let Some(h) = v.hash {
            s.push_str(&format!("    digest: {}\n", h.name()));
        }
        match v.generator {
            primeforge::dh::fips186::Generator::Canonical(i) => {
                s.push_str(&format!("    gindex: {i}\n"))
            }
            primeforge::dh::fips186::Generator::Unverifiable(h) => {
                s.push_str(&format!("    hindex: {h}\n"))
            }
            primeforge::dh::fips186::Generator::Unknown => {}
        }
    }
    s
}

/// One line with what makes FIPS 186-4 parameters verifiable.
pub fn provenance(v: &primeforge::dh::fips186::Provenance) -> String {
    use primeforge::dh::fips186::Generator;
    let hex: String = v.seed.iter().map(|b| format!("{b:02x}")).collect();
    let g = match v.generator {
        Generator::Canonical(i) => format!("canonical g, index {i} (A.2.3)"),
        Generator::Unverifiable(h) => format!("g from h = {h} (A.2.1)"),
        Generator::Unknown => String::new(),
    };
    format!(
        "seed {hex}, counter {}, {}, {g}",
        v.counter,
        v.hash.map_or("hash unknown", |h| h.name())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_blocks_look_like_openssl() {
        let mut s = String::new();
        hex_block(&mut s, &[0x80; 16], 4);
        assert_eq!(
            s,
            "    00:80:80:80:80:80:80:80:80:80:80:80:80:80:80:\n    80:80\n"
        );
        let mut s = String::new();
        hex_block(&mut s, &[0, 0x12, 0x34], 2);
        assert_eq!(s, "  12:34\n");
        let mut s = String::new();
        field(&mut s, "G", &[2], 4, 8);
        assert_eq!(s, "    G:    2 (0x2)\n");
    }
}

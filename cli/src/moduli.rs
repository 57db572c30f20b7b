//! OpenSSH's moduli file (moduli(5), `/etc/ssh/moduli`): the line format,
//! the generator rule `ssh-keygen -M screen` applies, and the screening of
//! existing lines.
//!
//! A line is `TIME TYPE TESTS TRIALS SIZE GENERATOR MODULUS`: TIME is UTC
//! `YYYYMMDDHHMMSS`; TYPE 2 is a safe prime (4: a Sophie Germain prime q,
//! the modulus being 2q + 1, as `ssh-keygen -M generate` writes
//! candidates); TESTS is a bit mask (0x02 sieve, 0x04 Miller–Rabin);
//! TRIALS the number of primality rounds; SIZE the bit length of the
//! number on the line minus one; MODULUS in hexadecimal.

use rug::Integer;

use primeforge::dh::{check, DhParams};

/// TYPE of a safe prime p.
pub const TYPE_SAFE: u32 = 2;
/// TYPE of a Sophie Germain prime q (the modulus is 2q + 1).
pub const TYPE_SOPHIE_GERMAIN: u32 = 4;
/// TESTS: sieved, then Miller–Rabin.
pub const TESTS_SIEVE_MR: u32 = 0x02 | 0x04;

/// The comment that heads a generated file: what its TRIALS count, and
/// that every p is proven prime, which no field of the format can say.
pub const PROOF_NOTE: &str = "\
# primeforge: every p below is proven prime by Pocklington's criterion from
# q = (p - 1)/2 (2^(p-1) = 1 mod p, and gcd(2^2 - 1, p) = 1); q passed trial
# division, a Miller-Rabin round to base 2, TRIALS - 1 rounds with random
# bases (error below 2^-128 for a random candidate) and a strong Lucas test.
# TRIALS counts the Miller-Rabin rounds on q.
";

/// One moduli(5) line for the safe prime `p` with generator `g`.
pub fn line(time: &str, trials: u32, p: &Integer, g: u32) -> String {
    format!(
        "{time} {TYPE_SAFE} {TESTS_SIEVE_MR} {trials} {} {g} {p:X}",
        p.significant_bits() - 1
    )
}

/// The modulus a line describes, or why it is not a usable line. Comments
/// and blank lines are `Ok(None)`.
pub fn parse(text: &str) -> Result<Option<Integer>, String> {
    let t = text.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let f: Vec<&str> = t.split_whitespace().collect();
    if f.len() != 7 {
        return Err(format!("{} fields, moduli(5) has 7", f.len()));
    }
    let ty: u32 = f[1]
        .parse()
        .map_err(|_| "TYPE is not a number".to_string())?;
    let size: u32 = f[4]
        .parse()
        .map_err(|_| "SIZE is not a number".to_string())?;
    let n =
        Integer::from_str_radix(f[6], 16).map_err(|_| "MODULUS is not hexadecimal".to_string())?;
    // As ssh-keygen reads them: type 4 lists q, every other type p.
    let p = match ty {
        TYPE_SOPHIE_GERMAIN => (n << 1u32) + 1u32,
        0..=5 => n,
        other => return Err(format!("TYPE {other} (moduli(5) types are 0 to 5)")),
    };
    if p.significant_bits() > primeforge::dh::MAX_BITS {
        return Err("MODULUS larger than 16384 bits".into());
    }
    // SIZE is the bit length of the number on the line minus one (for
    // type 4, of q: ssh-keygen adds one before comparing with p's); it
    // drops lines where it does not match, and those below 511.
    let listed = if ty == TYPE_SOPHIE_GERMAIN {
        p.significant_bits() - 1
    } else {
        p.significant_bits()
    };
    if size + 1 != listed {
        return Err(format!("SIZE {size} does not match a {listed}-bit number"));
    }
    if size < 511 {
        return Err(format!("SIZE {size} below ssh-keygen's minimum of 511"));
    }
    Ok(Some(p))
}

/// Whether `p` passes the screen with generator `g`: p and (p − 1)/2
/// probable primes (Baillie–PSW plus random-base Miller–Rabin rounds, see
/// `dh::check`) and g in range.
pub fn passes(p: &Integer, g: u32) -> Result<bool, primeforge::Error> {
    let params = DhParams::from_parts(p.clone(), Integer::from(g), None);
    Ok(check::check(&params)? & !check::MODULUS_TOO_SMALL == 0)
}

/// Miller–Rabin rounds (with random bases) `passes` runs on q, plus the
/// base-2 round, for the TRIALS field.
pub fn trials(bits: u32) -> u32 {
    primeforge::prime::mr::rounds_for_bits(bits - 1) + 1
}

/// UTC now as `YYYYMMDDHHMMSS`.
pub fn now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_rule_is_ssh_keygens() {
        use primeforge::dh::ssh_generator;
        assert_eq!(ssh_generator(&Integer::from(59u32)), Some(2)); // 59 ≡ 11 (mod 24)
        assert_eq!(ssh_generator(&Integer::from(23u32)), Some(5)); // 23 ≡ 3 (mod 10)
        assert_eq!(ssh_generator(&Integer::from(47u32)), Some(5)); // 47 ≡ 7 (mod 10)
        assert_eq!(ssh_generator(&Integer::from(71u32)), None); // 71 ≡ 23 (mod 24), 1 (mod 10)
    }

    #[test]
    fn lines_round_trip_and_bad_lines_are_named() {
        // A 600-bit odd number (primality is not parse's business).
        let p = (Integer::from(1u32) << 599u32) + 0x1234_5677u32;
        let l = line("20261130000000", 5, &p, 2);
        assert_eq!(parse(&l).unwrap(), Some(p.clone()));
        assert!(l.starts_with("20261130000000 2 6 5 599 2 8"));
        let q = Integer::from(&p - 1u32) >> 1u32;
        let q_line = format!("20261130000000 4 2 0 598 0 {q:X}");
        assert_eq!(parse(&q_line).unwrap(), Some(p.clone()));
        assert_eq!(parse("# comment").unwrap(), None);
        assert_eq!(parse("").unwrap(), None);
        assert!(parse("1 2 6 5 30 2").unwrap_err().contains("6 fields"));
        assert!(parse(&l.replace(" 599 ", " 598 "))
            .unwrap_err()
            .contains("SIZE"));
        assert!(parse("1 2 6 5 30 2 77359401").unwrap_err().contains("511"));
        assert!(parse("1 2 6 5 30 2 XYZ")
            .unwrap_err()
            .contains("hexadecimal"));
        assert!(parse(&l.replacen(" 2 6 ", " 7 6 ", 1))
            .unwrap_err()
            .contains("TYPE 7"));
    }

    #[test]
    fn the_clock_formats() {
        let t = now();
        assert_eq!(t.len(), 14);
        assert!(t.starts_with("20"));
    }
}

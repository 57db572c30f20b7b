//! Tests whose subject needs a capability of the machine (valgrind, BMI2
//! and ADX, AVX-512 IFMA, ptrace, core files): without it they say so on
//! the terminal — past the test harness's capture, so a passing run shows
//! what it did not check — and where `PRIMEFORGE_REQUIRE` names the
//! capability (CI sets it from what the machine has: `.ci/run`), they fail
//! instead: a silent pass would be a false claim.

use std::io::Write;

/// Records that the calling test cannot run its subject here, for want of
/// `capability` (`why` says what is missing); panics if the run requires it.
pub(crate) fn skip(capability: &str, why: &str) {
    let required = std::env::var("PRIMEFORGE_REQUIRE").unwrap_or_default();
    if required.split(',').any(|c| c.trim() == capability) {
        panic!("PRIMEFORGE_REQUIRE names {capability}, but: {why}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED (no {capability}): {why} ***"
    );
}

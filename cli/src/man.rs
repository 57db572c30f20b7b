//! `primeforge man`: the manual pages, from the options (clap_mangen)
//! and the sections clap does not write.

use std::path::Path;

use crate::args::Cli;
use crate::common::Fail;

/// primeforge.1 and primeforge-SUBCOMMAND.1 for every subcommand.
pub(crate) fn write_man_pages(dir: &Path) -> Result<(), Fail> {
    let io = |e: std::io::Error| Fail(format!("{}: {e}", dir.display()), 1);
    std::fs::create_dir_all(dir).map_err(io)?;
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut pages = vec![("primeforge".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands() {
        let name = format!("primeforge-{}", sub.get_name());
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        pages.push((name, sub.clone().name(leaked)));
    }
    for (name, page) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf).map_err(io)?;
        buf.extend_from_slice(man_sections(&name).as_bytes());
        std::fs::write(dir.join(format!("{name}.1")), buf).map_err(io)?;
    }
    Ok(())
}

/// The sections clap does not write, as openssl-dhparam(1) and
/// ssh-keygen(1) have them: EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO.
pub(crate) fn man_sections(page: &str) -> String {
    let mut s = String::from(
        ".SH \"EXIT STATUS\"\n\
         .TP\n0\nSuccess; for \\fBcheck\\fR, the file is valid.\n\
         .TP\n1\nAn error (unreadable or unwritable file, bad passphrase, a failed \
         generation); for \\fBcheck\\fR, also a file with problems.\n\
         .TP\n2\nA usage error: a bad or conflicting option, reported in one line before any work.\n\
         .TP\n130\nInterrupted (SIGINT or SIGTERM): the generation was cancelled and nothing written.\n\
         .SH ENVIRONMENT\n\
         .TP\nVAR\nA passphrase source \\fBenv:\\fIVAR\\fR reads the variable VAR.\n\
         .TP\nPRIMEFORGE_GMP_CPU\nForces the CPU profile of the bundled GMP \
         (for diagnosis; the output does not change).\n",
    );
    if page == "primeforge" || page == "primeforge-moduli" {
        s.push_str(
            ".SH FILES\n.TP\n/etc/ssh/moduli\nOpenSSH's Diffie-Hellman groups \
             (what \\fBprimeforge moduli\\fR writes and \\fB--screen\\fR reads).\n",
        );
    }
    let see_also: &[&str] = match page {
        "primeforge-rsa" => &["openssl-genpkey(1)", "openssl-pkey(1)", "ssh-keygen(1)"],
        "primeforge-dhparam" => &["openssl-dhparam(1)", "openssl-genpkey(1)"],
        "primeforge-check" => &["openssl-pkey(1)", "openssl-dhparam(1)"],
        "primeforge-pubkey" => &["openssl-pkey(1)"],
        "primeforge-moduli" => &["ssh-keygen(1)", "moduli(5)", "sshd_config(5)"],
        _ => &[
            "openssl-dhparam(1)",
            "openssl-genpkey(1)",
            "ssh-keygen(1)",
            "moduli(5)",
        ],
    };
    s.push_str(".SH \"SEE ALSO\"\n");
    let mut refs: Vec<String> = see_also.iter().map(|r| r.to_string()).collect();
    if page == "primeforge" {
        for sub in ["rsa", "dhparam", "check", "pubkey", "moduli"] {
            refs.push(format!("primeforge-{sub}(1)"));
        }
    } else {
        refs.insert(0, "primeforge(1)".into());
    }
    s.push_str(&refs.join(",\n"));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_the_closing_sections() {
        for page in ["primeforge", "primeforge-rsa", "primeforge-moduli"] {
            let s = man_sections(page);
            for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH \"SEE ALSO\""] {
                assert!(s.contains(section), "{page}: {section}");
            }
        }
        assert!(man_sections("primeforge-moduli").contains("moduli(5)"));
        assert!(!man_sections("primeforge-rsa").contains(".SH FILES"));
    }
}

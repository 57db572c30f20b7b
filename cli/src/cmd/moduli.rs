//! `primeforge moduli`.

use std::path::Path;
use std::sync::atomic::Ordering;

use primeforge::dh::{self, named::Group};
use rug::Integer;

use crate::args::ModuliArgs;
use crate::common::{check_outputs, emit, from_core, usage, with_progress, Fail};
use crate::moduli;
use crate::signals::{GENERATING, INTERRUPTED};

pub(crate) fn group_by_name(name: &str) -> Option<Group> {
    let norm: String = name
        .to_ascii_lowercase()
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect();
    Group::ALL
        .into_iter()
        .find(|g| g.name().replace('_', "") == norm)
}

pub(crate) fn run_moduli(a: ModuliArgs) -> Result<(), Fail> {
    let screened: Vec<&Path> = a.screen.iter().map(|p| p.as_path()).collect();
    check_outputs(&[("--out", a.common.out.as_deref())], &screened)?;
    let mut lines: Vec<(Integer, String)> = Vec::new();
    let mut interrupted = false;
    if let Some(file) = &a.screen {
        // Public data, and /etc/ssh/moduli is about half a megabyte: an
        // ordinary read.
        let data = if file.as_os_str() == "-" {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v).map(|_| v)
        } else {
            std::fs::read(file)
        }
        .map_err(|e| Fail(format!("{}: {e}", file.display()), 1))?;
        let text = std::str::from_utf8(&data)
            .map_err(|_| Fail(format!("{}: not a text file", file.display()), 1))?;
        let (mut seen, mut bad) = (0, 0);
        for (i, l) in text.lines().enumerate() {
            if INTERRUPTED.load(Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let p = match moduli::parse(l) {
                Ok(None) => continue,
                Ok(Some(p)) => p,
                Err(why) => {
                    bad += 1;
                    if !a.common.quiet {
                        eprintln!("{}:{}: skipped: {why}", file.display(), i + 1);
                    }
                    continue;
                }
            };
            seen += 1;
            let Some(g) = dh::ssh_generator(&p) else {
                continue;
            };
            GENERATING.store(true, Ordering::SeqCst);
            let ok = moduli::passes(&p, g);
            GENERATING.store(false, Ordering::SeqCst);
            if ok.map_err(from_core)? {
                let bits = p.significant_bits();
                lines.push((
                    p.clone(),
                    moduli::line(&moduli::now(), moduli::trials(bits), &p, g),
                ));
            }
        }
        if !a.common.quiet {
            eprintln!(
                "screened {seen} moduli: {} passed{}",
                lines.len(),
                if bad > 0 {
                    format!(", {bad} lines unreadable")
                } else {
                    String::new()
                }
            );
        }
    } else {
        if a.count == 0 || a.count > 100_000 {
            return Err(usage("--count: 1 to 100000"));
        }
        if let Some(b) = a.bits.iter().find(|b| !(1024..=8192).contains(*b)) {
            return Err(usage(format!(
                "--bits: {b}: OpenSSH moduli are 1024 to 8192 bits"
            )));
        }
        let common = &a.common;
        'sizes: for &bits in &a.bits {
            // Every prime ssh-keygen gives a generator (2 or 5).
            let request = dh::Request::new(bits, 0, dh::FLAG_SSH_MODULI).map_err(from_core)?;
            // One sieve for the size: its set-up is shared by all COUNT
            // searches (and sized for them), each still its own search, so
            // Ctrl-C keeps every prime already found.
            let mut batch =
                dh::Batch::new(&request, a.count.min(dh::BATCH_MAX), None).map_err(from_core)?;
            for i in 0..a.count {
                let what = format!("{bits} bits, {} of {}", i + 1, a.count);
                let got = with_progress(
                    common,
                    0.064 * (bits as f64).powi(2),
                    "positions",
                    |o| batch.next(o),
                    |secs, _| format!("{what}: done in {secs}"),
                );
                match got {
                    Ok(params) => {
                        let p = params.p().clone();
                        let g = params
                            .g()
                            .to_u32()
                            .ok_or_else(|| from_core(primeforge::Error::Internal))?;
                        let line = moduli::line(&moduli::now(), moduli::trials(bits), &p, g);
                        lines.push((p, line));
                    }
                    Err(Fail(_, 130)) => {
                        interrupted = true;
                        break 'sizes;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    // By size, then value, as /etc/ssh/moduli is sorted.
    lines.sort_by(|x, y| {
        x.0.significant_bits()
            .cmp(&y.0.significant_bits())
            .then_with(|| x.0.cmp(&y.0))
    });
    let mut text: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    if a.screen.is_none() && !lines.is_empty() {
        // What TRIALS counts, and what was proven beyond it (the format
        // has no field for a proof; comments are skipped by sshd and
        // ssh-keygen).
        text.insert_str(0, moduli::PROOF_NOTE);
    }
    emit(text.as_bytes(), a.common.out.as_deref(), false, false)?;
    if interrupted {
        return Err(Fail(
            format!(
                "interrupted: the {} complete moduli were written",
                lines.len()
            ),
            130,
        ));
    }
    Ok(())
}

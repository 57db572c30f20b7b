//! `primeforge`: RSA keys and DH parameters on every core, from the
//! command line. Uses the Rust core directly (not the C ABI).

#![deny(clippy::undocumented_unsafe_blocks)]

use std::io::IsTerminal;
use std::process::ExitCode;

use args::{Cli, Command};
use common::Fail;

mod args;
mod cmd;
mod common;
mod man;
mod moduli;
mod out;
mod pass;
mod signals;
mod text;

fn main() -> ExitCode {
    signals::install_signals();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(msg) = args::single_dash_long_option(&args) {
        eprintln!("primeforge: {msg}");
        return ExitCode::from(2);
    }
    // --version says what a bug report needs (build_info), not just the
    // version number.
    let info = primeforge::build_info();
    let info: &'static str = Box::leak(
        info.strip_prefix("primeforge ")
            .unwrap_or(&info)
            .to_string()
            .into_boxed_str(),
    );
    let command = <Cli as clap::CommandFactory>::command()
        .version(info)
        .long_version(info);
    let cli = match command
        .try_get_matches_from(&args)
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with exit 0; usage errors are
            // one clear message with exit 2 (clap's convention).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Rsa(a) => cmd::rsa::run_rsa(a).map(|_| true),
        Command::Dhparam(a) => cmd::dhparam::run_dh(a).map(|_| true),
        Command::Dsaparam(a) => cmd::dhparam::run_dsa(a).map(|_| true),
        Command::Check { file, passin } => cmd::check::run_check(&file, passin.as_deref()),
        Command::Pubkey(a) => cmd::pubkey::run_pubkey(a).map(|_| true),
        Command::Moduli(a) => cmd::moduli::run_moduli(a).map(|_| true),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "primeforge", &mut std::io::stdout());
            Ok(true)
        }
        Command::Man { dir } => man::write_man_pages(&dir).map(|_| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(Fail(msg, code)) => {
            if std::io::stderr().is_terminal() {
                eprint!("\r\x1b[2K");
            }
            eprintln!("primeforge: {msg}");
            ExitCode::from(code)
        }
    }
}

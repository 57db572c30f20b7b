//! Links the module so that it exports only `OSSL_provider_init` (every
//! other symbol, the primeforge engine's `pf_*` and GMP's included, is
//! local), binds at load time and is never unloaded under its own objects.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let script = out.join("provider.map");
    std::fs::write(&script, "{ global: OSSL_provider_init; local: *; };\n").unwrap();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
            script.display()
        );
        println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,now");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,relro");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
}

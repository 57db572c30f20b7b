//! The C++17 wrapper `include/primeforge.hpp`, compiled with
//! `-std=c++17 -Wall -Wextra -Werror -pedantic` and run.

mod common;

#[test]
fn cpp_wrapper_compiles_and_works() {
    let src = common::manifest_dir().join("tests/cpp/wrapper.cpp");
    let exe = common::compile_cxx("cpp_wrapper", &[&src], &[]);
    let r = common::run_ok(&exe, &[]);
    assert!(r.stdout.contains("0 failures"), "{}", r.stdout);
}

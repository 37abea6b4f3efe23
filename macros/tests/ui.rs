//! Compile-fail tests: every mistake `#[kernel]` and `#[clustered]` report,
//! with the expected diagnostics pinned in `tests/ui/*.stderr`.
//!
//! Only error paths can run on the host (a successful expansion is an
//! `extern "ptx-kernel"` fn, which needs nvptx64 and `#![feature(abi_ptx)]`).
//! Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test -p clustered-macros --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

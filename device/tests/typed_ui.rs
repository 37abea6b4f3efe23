//! Compile-fail tests of the typed handles: arguments of the wrong count or
//! type, and a schedule name that the handle reserves, are compile errors.
//! Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test -p clustered-device --test typed_ui`.

#[test]
fn typed_ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/typed_ui/pass_*.rs");
    t.compile_fail("tests/typed_ui/fail_*.rs");
}

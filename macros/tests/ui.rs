//! Misuses of the attributes fail to compile, each with the message checked in beside it
//! (`tests/ui/*.stderr`). Regenerate them after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p ritmo-macros --test ui`, and read the diff.

#[test]
fn misuses_fail_to_compile_with_a_clear_message() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}

//! Numbers the README gives for a named constant are the constant's: a
//! stranger reads "`RING_ENTRIES` (64)" as the code's word. (The README said
//! 16 for two protocol versions after the rings grew.)

use clustered_suite::host::pool::{DEFAULT_DEPTH, DEFAULT_SPIN, POOL_ABI_VERSION, RING_ENTRIES};

const README: &str = include_str!("../../README.md");

#[test]
fn the_readme_states_the_pools_constants_as_the_code_defines_them() {
    let says = |text: String| {
        assert!(
            README.contains(&text),
            "README.md should say `{text}` (the constant changed, or the sentence did)"
        )
    };
    says(format!("`RING_ENTRIES` ({RING_ENTRIES})"));
    says(format!("`PoolConfig::depth`, {DEFAULT_DEPTH} by default"));
    says(format!("({} ms by default", DEFAULT_SPIN.as_millis()));
    says(format!(
        "version {POOL_ABI_VERSION}: rings of {RING_ENTRIES}"
    ));
}

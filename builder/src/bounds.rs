//! Writes each entry's launch bounds into the PTX: `#[launch_bounds]`
//! leaves a global `__clustered_bounds_<entry>` (`clustered_abi::bounds`),
//! which rustc cannot turn into the directives ptxas reads, so the build
//! writes `.maxntid` and `.minnctapersm` between the entry's parameter list
//! and its body.

use clustered_abi::{LaunchBounds, LAUNCH_BOUNDS_PREFIX};

/// `ptx` with every entry's bounds written into its header; an error names
/// a global that cannot be read or whose entry is missing (neither happens
/// with what the macro emits). One pass: the globals come before the
/// entries in rustc's PTX, and an entry's directives go just before the
/// `{` that opens its body.
pub fn apply(ptx: &str) -> Result<String, String> {
    use crate::ptx_check::function_name;
    let mut bounds = std::collections::BTreeMap::new();
    let mut text = String::with_capacity(ptx.len());
    let mut pending = None;
    for line in ptx.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(global) = global(trimmed) {
            let (entry, value) = global?;
            bounds.insert(entry, value);
        } else if crate::ptx_check::code(trimmed).contains(".entry") {
            pending = function_name(trimmed).and_then(|name| bounds.remove(name));
        } else if trimmed.starts_with('{') {
            if let Some(value) = pending.take() {
                text.push_str(&format!("{value}\n"));
            }
        }
        text.push_str(line);
    }
    match bounds.keys().next() {
        Some(entry) => Err(format!(
            "`{LAUNCH_BOUNDS_PREFIX}{entry}` has no `.entry {entry}` after it"
        )),
        None => Ok(text),
    }
}

/// The launch bounds the macro left in `ptx` (its `__clustered_bounds_*`
/// globals), entry by entry, in the order they appear: what [`apply`]
/// writes into each entry's header, for checking built PTX.
pub fn declared(ptx: &str) -> Result<Vec<(&str, LaunchBounds)>, String> {
    ptx.lines().filter_map(|line| global(line.trim())).collect()
}

/// The entry and bounds of a bounds global on `line`; `None` for any other
/// line, an error for one that cannot be read.
fn global(line: &str) -> Option<Result<(&str, LaunchBounds), String>> {
    use crate::ptx_check::{global_bytes, global_named};
    let entry = global_named(line, LAUNCH_BOUNDS_PREFIX)?;
    Some(
        global_bytes(line)
            .and_then(|bytes| LaunchBounds::from_bytes(&bytes))
            .map(|value| (entry, value))
            .ok_or_else(|| format!("the launch bounds of `{entry}` cannot be read from `{line}`")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.visible .global .align 4 .b8 __clustered_bounds_k[8] = {0, 1, 0, 0, 1, 0, 0, 0};
.visible .global .align 4 .b8 __clustered_bounds_k_agents[8] = {128};

.visible .entry k(
\t.param .u64 .ptr .align 1 k_param_0
)                                       // @k
{
\tret;
}
.visible .entry k_agents(
\t.param .u64 .ptr .align 1 k_agents_param_0
)
{
\tret;
}
.visible .entry other()
{
\tret;
}
";

    #[test]
    fn writes_each_entrys_directives_before_its_body() {
        let text = apply(PTX).unwrap();
        assert!(
            text.contains("// @k\n.maxntid 256, 1, 1\n.minnctapersm 1\n{"),
            "{text}"
        );
        assert!(
            text.contains("k_agents_param_0\n)\n.maxntid 128, 1, 1\n{"),
            "no .minnctapersm where none was given: {text}"
        );
        assert!(text.contains(".entry other()\n{"), "{text}");
    }

    #[test]
    fn declared_reads_every_entrys_bounds() {
        let declared = declared(PTX).unwrap();
        assert_eq!(
            declared,
            [
                ("k", LaunchBounds::new(256, 1).unwrap()),
                ("k_agents", LaunchBounds::new(128, 0).unwrap()),
            ]
        );
    }

    #[test]
    fn a_module_without_bounds_is_unchanged() {
        let plain = ".visible .entry k()\n{\n\tret;\n}\n";
        assert_eq!(apply(plain).unwrap(), plain);
    }

    #[test]
    fn a_global_without_its_entry_or_value_is_an_error() {
        let orphan = ".visible .global .align 4 .b8 __clustered_bounds_gone[8] = {0, 1, 0, 0, 1, 0, 0, 0};\n";
        assert!(apply(orphan).unwrap_err().contains(".entry gone"));
        let zero = ".visible .global .align 4 .b8 __clustered_bounds_k[8] = {0, 0, 0, 0, 1, 0, 0, 0};\n.visible .entry k()\n{\n}\n";
        assert!(apply(zero).unwrap_err().contains("cannot be read"));
    }
}

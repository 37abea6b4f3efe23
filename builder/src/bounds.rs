//! Writes each entry's launch bounds into the PTX: `#[launch_bounds]`
//! leaves a global `__clustered_bounds_<entry>` (`clustered_abi::bounds`),
//! which rustc cannot turn into the directives ptxas reads, so the build
//! writes `.maxntid` and `.minnctapersm` between the entry's parameter list
//! and its body.

use clustered_abi::{LaunchBounds, LAUNCH_BOUNDS_PREFIX};

/// `ptx` with every entry's bounds written into its header; an error names
/// a global that cannot be read or whose entry is missing (neither happens
/// with what the macro emits).
pub fn apply(ptx: &str) -> Result<String, String> {
    let mut bounds = Vec::new();
    for line in ptx.lines() {
        let code = crate::ptx_check::code(line.trim());
        let Some(at) = code.find(LAUNCH_BOUNDS_PREFIX) else {
            continue;
        };
        if !code.contains(".global") {
            continue;
        }
        let rest = &code[at + LAUNCH_BOUNDS_PREFIX.len()..];
        let entry = rest.split(['[', ' ', ';']).next().unwrap_or(rest);
        let value = crate::ptx_check::global_bytes(code)
            .and_then(|bytes| LaunchBounds::from_bytes(&bytes))
            .ok_or_else(|| {
                format!("the launch bounds of `{entry}` cannot be read from `{code}`")
            })?;
        bounds.push((entry, value));
    }
    let mut text = ptx.to_string();
    for (entry, value) in bounds {
        let header = entry_header(&text, entry)
            .ok_or_else(|| format!("`{LAUNCH_BOUNDS_PREFIX}{entry}` has no `.entry {entry}`"))?;
        let body = text[header..]
            .match_indices('\n')
            .map(|(at, _)| header + at + 1)
            .find(|&line| {
                text[line..]
                    .trim_start_matches([' ', '\t'])
                    .starts_with('{')
            })
            .ok_or_else(|| format!("`.entry {entry}` has no body"))?;
        text.insert_str(body, &format!("{value}\n"));
    }
    Ok(text)
}

/// Where the line `.visible .entry <entry>(` starts.
fn entry_header(ptx: &str, entry: &str) -> Option<usize> {
    let mut offset = 0;
    for line in ptx.split_inclusive('\n') {
        let code = crate::ptx_check::code(line.trim());
        let mut words = code.split_whitespace();
        let mut word = words.next();
        if matches!(word, Some(".visible" | ".weak")) {
            word = words.next();
        }
        if word == Some(".entry")
            && words
                .next()
                .and_then(|w| w.split('(').next())
                .is_some_and(|name| name == entry)
        {
            return Some(offset);
        }
        offset += line.len();
    }
    None
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

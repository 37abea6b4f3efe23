//! Expansion snapshots of `#[clustered]`, `#[kernel]` and `task_pool!`.
//!
//! Each `tests/expand/<name>.rs` is a small source file with one annotated
//! function (and whatever it uses: `use`s, helper functions). The annotated
//! function is expanded as rustc would expand it (the first `#[clustered]` or
//! `#[kernel]` is taken off and given the rest), the result is formatted with
//! `prettyplease` and compared with `tests/expand/<name>.expanded.rs`.
//!
//! An entry point, `::clustered_device::entry_point! { fn .. }`, is shown as
//! `#[entry_point] fn ..` so that its body is formatted too.
//!
//! The generated code targets nvptx64, so it is not compiled here: read the
//! `.expanded.rs` files when reviewing a change to the expansion. After an
//! intended change, rewrite them with
//! `BLESS=1 cargo test -p clustered-macros --lib snapshots`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use syn::{Attribute, Item, Meta};

const EXPANDED: &str = ".expanded.rs";

/// Which of our attributes this is, if any.
fn ours(attr: &Attribute) -> Option<&'static str> {
    ["clustered", "kernel", "launch_bounds"]
        .into_iter()
        .find(|name| crate::kernel::is_attribute(attr, name))
}

/// Is `mac` a call of the macro `name` (by its last path segment)?
fn is_macro(mac: &syn::ItemMacro, name: &str) -> bool {
    mac.mac
        .path
        .segments
        .last()
        .is_some_and(|s| s.ident == name)
}

/// `entry_point! { fn }` as `#[entry_point] fn`, which prettyplease formats.
fn readable_entry_point(item: Item) -> Result<Item, String> {
    match item {
        Item::Macro(mac) if is_macro(&mac, "entry_point") => {
            let mut function: syn::ItemFn = syn::parse2(mac.mac.tokens)
                .map_err(|e| format!("entry_point! does not hold a function: {e}"))?;
            function.attrs.insert(0, syn::parse_quote!(#[entry_point]));
            Ok(Item::Fn(function))
        }
        other => Ok(other),
    }
}

/// Expands the annotated functions of one input file.
fn expand_file(source: &str) -> Result<String, String> {
    let file = syn::parse_file(source).map_err(|e| format!("does not parse: {e}"))?;
    let mut items = Vec::new();
    let mut expanded = 0;
    for item in file.items {
        let mut function = match item {
            Item::Fn(function) => function,
            // `task_pool!(..)` at item level: expanded like an attribute.
            Item::Macro(mac) if is_macro(&mac, "task_pool") => {
                let output = crate::task::expand_pool(mac.mac.tokens);
                let output: syn::File = syn::parse2(output)
                    .map_err(|e| format!("task_pool! does not expand to items: {e}"))?;
                for item in output.items {
                    items.push(readable_entry_point(item)?);
                }
                expanded += 1;
                continue;
            }
            item => {
                items.push(item);
                continue;
            }
        };
        // rustc expands the first attribute macro; the others stay on the item.
        let Some(index) = function.attrs.iter().position(|a| ours(a).is_some()) else {
            items.push(Item::Fn(function));
            continue;
        };
        let attr = function.attrs.remove(index);
        let args = match &attr.meta {
            Meta::List(list) => list.tokens.clone(),
            Meta::Path(_) => TokenStream::new(),
            Meta::NameValue(_) => return Err("`#[attr = ..]` is not a form of ours".into()),
        };
        let item = quote::quote!(#function);
        let output = match ours(&attr) {
            Some("clustered") => crate::clustered::expand(args, item),
            Some("launch_bounds") => {
                // Written above the kernel attribute: it puts itself below
                // it, and rustc expands the function again.
                let again = crate::bounds::expand(args, item);
                let again = syn::parse2::<syn::ItemFn>(again).map_err(|e| {
                    format!("#[launch_bounds] does not give the function back: {e}")
                })?;
                let source = format!("{}", quote::quote!(#again));
                items.extend(
                    syn::parse_file(&expand_file(&source)?)
                        .map_err(|e| e.to_string())?
                        .items,
                );
                expanded += 1;
                continue;
            }
            _ => crate::kernel::expand(args, item),
        };
        if output.to_string().contains("compile_error") {
            return Err(format!(
                "the expansion reports errors (snapshots are for valid inputs; put error cases in tests/ui):\n{output}"
            ));
        }
        let output: syn::File = syn::parse2(output)
            .map_err(|e| format!("the expansion does not parse as items: {e}"))?;
        for item in output.items {
            items.push(readable_entry_point(item)?);
        }
        expanded += 1;
    }
    if expanded == 0 {
        return Err("has no function with #[clustered] or #[kernel], nor a task_pool!".into());
    }
    let header = "// @generated by macros/src/snapshots.rs: do not edit; rerun with BLESS=1.\n\n";
    Ok(format!(
        "{header}{}",
        prettyplease::unparse(&syn::File {
            shebang: None,
            attrs: file.attrs,
            items,
        })
    ))
}

/// A line diff (longest common subsequence), with two lines of context.
fn diff(expected: &str, actual: &str) -> String {
    let old: Vec<&str> = expected.lines().collect();
    let new: Vec<&str> = actual.lines().collect();
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![vec![0usize; new.len() + 1]; old.len() + 1];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut lines = Vec::new(); // (tag, line number in the expected file, text)
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            lines.push((' ', i + 1, old[i]));
            i += 1;
            j += 1;
        } else if i < old.len() && (j == new.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', i + 1, old[i]));
            i += 1;
        } else {
            lines.push(('+', i + 1, new[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = (0..lines.len()).filter(|&k| lines[k].0 != ' ').collect();
    let mut out = String::new();
    let mut last_shown = None;
    for (k, &(tag, line, text)) in lines.iter().enumerate() {
        if !changed.iter().any(|&c| c.abs_diff(k) <= 2) {
            continue;
        }
        if last_shown.is_some_and(|last| last + 1 != k) || (last_shown.is_none() && k > 0) {
            let _ = writeln!(out, "@@ near line {line} of the expected file");
        }
        let _ = writeln!(out, "{tag} {text}");
        last_shown = Some(k);
    }
    out
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".rs") && !name.ends_with(EXPANDED)
        })
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn expansions_match_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let inputs = inputs(&dir);
    assert!(
        inputs.len() >= 5,
        "expected the inputs in {}",
        dir.display()
    );
    let mut failures = String::new();
    for input in &inputs {
        let name = input.file_stem().unwrap().to_str().unwrap();
        let snapshot = dir.join(format!("{name}{EXPANDED}"));
        let source = std::fs::read_to_string(input).unwrap();
        let actual = match expand_file(&source) {
            Ok(actual) => actual,
            Err(message) => {
                let _ = writeln!(failures, "tests/expand/{name}.rs {message}\n");
                continue;
            }
        };
        if bless {
            std::fs::write(&snapshot, &actual)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", snapshot.display()));
            continue;
        }
        match std::fs::read_to_string(&snapshot) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => {
                let _ = writeln!(
                    failures,
                    "tests/expand/{name}{EXPANDED} differs from the expansion (- expected, + actual):\n{}",
                    diff(&expected, &actual)
                );
            }
            Err(_) => {
                let _ = writeln!(failures, "tests/expand/{name}{EXPANDED} is missing\n");
            }
        }
    }
    // A snapshot whose input is gone would go stale unnoticed.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Some(name) = file.strip_suffix(EXPANDED) {
            if !dir.join(format!("{name}.rs")).exists() {
                let _ = writeln!(
                    failures,
                    "tests/expand/{file} has no input {name}.rs; delete it\n"
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{failures}If the new expansion is intended, rerun with BLESS=1:\n    BLESS=1 cargo test -p clustered-macros --lib snapshots"
    );
}

#[test]
fn diff_shows_changed_lines_with_context() {
    let expected = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let actual = "a\nb\nc\nd\nE\nf\ng\nh\n";
    assert_eq!(
        diff(expected, actual),
        "@@ near line 3 of the expected file\n  c\n  d\n- e\n+ E\n  f\n  g\n"
    );
}

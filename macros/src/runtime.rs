//! Where the device runtime is, seen from the crate being compiled: the path
//! that every generated item starts with.

use proc_macro2::{Ident, Span, TokenStream};
use proc_macro_crate::{crate_name, FoundCrate};
use quote::quote;

/// The device runtime's path: `::clustered_device` when the crate depends on
/// it, `::clustered::device` through the facade, under the name the crate's
/// Cargo.toml gives either (`my_name = { package = "clustered" }`).
///
/// Neither crate compiles kernels itself, so `FoundCrate::Itself` (a doctest
/// or example of that crate) names it from outside. Without either
/// dependency (the macro crate's own tests) it is `::clustered_device`, and
/// rustc's error names the crate to add.
pub fn runtime_path() -> TokenStream {
    match crate_name("clustered-device") {
        Ok(FoundCrate::Name(name)) => return absolute(&name, None),
        Ok(FoundCrate::Itself) => return absolute("clustered_device", None),
        Err(_) => {}
    }
    match crate_name("clustered") {
        Ok(FoundCrate::Name(name)) => absolute(&name, Some("device")),
        Ok(FoundCrate::Itself) => absolute("clustered", Some("device")),
        Err(_) => absolute("clustered_device", None),
    }
}

fn absolute(krate: &str, module: Option<&str>) -> TokenStream {
    let krate = Ident::new(krate, Span::call_site());
    match module.map(|m| Ident::new(m, Span::call_site())) {
        Some(module) => quote!(::#krate::#module),
        None => quote!(::#krate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_crate_from_outside() {
        assert_eq!(
            absolute("clustered_device", None).to_string(),
            ":: clustered_device"
        );
        assert_eq!(
            absolute("gpu", Some("device")).to_string(),
            ":: gpu :: device"
        );
    }
}

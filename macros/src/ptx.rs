//! `include_ptx!("kernels")`: the PTX that `clustered_builder` built for the
//! kernels crate named `kernels`, as a `&'static str`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

/// The environment variable the builder sets (`clustered_builder::ptx_env_var`
/// computes the same name; the builder's test pins it).
pub fn env_var(package: &str) -> String {
    format!("CLUSTERED_PTX_{}", package.to_uppercase().replace('-', "_"))
}

pub fn expand(input: TokenStream) -> TokenStream {
    let package: LitStr = match syn::parse2(input) {
        Ok(package) => package,
        Err(error) => {
            let message = "include_ptx! takes the kernels crate's package name: \
                           `include_ptx!(\"kernels\")`";
            return syn::Error::new(error.span(), message).to_compile_error();
        }
    };
    let var = LitStr::new(&env_var(&package.value()), package.span());
    let missing = LitStr::new(
        &format!(
            "no PTX for the kernels crate `{}`: add `clustered_builder::build(\"<path to it>\");` \
             to this crate's build.rs (and clustered-builder to its [build-dependencies])",
            package.value()
        ),
        package.span(),
    );
    quote!(::core::include_str!(::core::env!(#var, #missing)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_builders_variable() {
        let tokens = expand(quote!("my-kernels")).to_string();
        assert!(tokens.contains("\"CLUSTERED_PTX_MY_KERNELS\""), "{tokens}");
    }

    #[test]
    fn anything_but_a_name_is_an_error_that_shows_the_form() {
        let tokens = expand(quote!(kernels)).to_string();
        assert!(tokens.contains("compile_error"), "{tokens}");
        assert!(tokens.contains("include_ptx!(\\\"kernels\\\")"), "{tokens}");
    }
}

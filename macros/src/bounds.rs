//! `#[launch_bounds(max_threads = T, min_blocks_per_sm = B)]`: CUDA's
//! `__launch_bounds__` for a `#[kernel]` or `#[clustered]` kernel
//! (`clustered_abi::bounds` says what they do and how they reach the PTX).
//!
//! The kernel attribute takes the bounds off the function ([`take`]) and
//! emits, for the kernel and each schedule, the global the builder reads
//! ([`globals`]) and the typed handle's `LAUNCH_BOUNDS` ([`handle_const`]).
//! Written above the kernel attribute, `#[launch_bounds]` expands first, on
//! its own ([`expand`]): it puts itself back below it.

use clustered_abi::LaunchBounds;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprLit, Ident, ItemFn, Lit};

use crate::kernel::is_attribute;

/// The attribute's name.
const NAME: &str = "launch_bounds";

/// A kernel's launch bounds as written: constant expressions of type `u32`.
pub struct Bounds {
    max_threads: Expr,
    min_blocks_per_sm: Option<Expr>,
    /// The attribute's path as written (`launch_bounds`,
    /// `clustered::launch_bounds`): used again, so that its import is not
    /// reported unused once the kernel attribute has taken it off.
    path: syn::Path,
}

/// `#[launch_bounds(..)]` expanded before the kernel attribute (written
/// above it): the item again, with the bounds moved to the end of its
/// attributes, where the kernel attribute finds them.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let example = "#[launch_bounds(max_threads = 256)] #[kernel] pub unsafe fn name(args) { .. }";
    let mut function = match crate::kernel::parse_function(item, "#[launch_bounds]", example) {
        Ok(function) => function,
        Err(tokens) => return tokens,
    };
    let mut errors = Vec::new();
    parse(attr.clone(), Span::call_site(), &mut errors);
    if !function
        .attrs
        .iter()
        .any(|a| is_attribute(a, "kernel") || is_attribute(a, "clustered"))
    {
        errors.push(Error::new(
            Span::call_site(),
            "#[launch_bounds] goes with a kernel: add #[kernel] or #[clustered(..)] to the function",
        ));
    }
    if let Some(errors) = crate::kernel::report(errors, &function) {
        return errors;
    }
    let device = crate::runtime::runtime_path();
    function
        .attrs
        .push(syn::parse_quote!(#[#device::launch_bounds(#attr)]));
    quote!(#function)
}

/// Takes every `#[launch_bounds]` off `function`: the bounds, if one was
/// written and reads well; every mistake goes to `errors`.
pub fn take(function: &mut ItemFn, errors: &mut Vec<Error>) -> Option<Bounds> {
    let (written, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut function.attrs)
        .into_iter()
        .partition(|a| is_attribute(a, NAME));
    function.attrs = kept;
    let mut bounds = None;
    for (i, attribute) in written.iter().enumerate() {
        if i > 0 {
            errors.push(Error::new_spanned(
                attribute,
                "#[launch_bounds] is given twice; keep one",
            ));
            continue;
        }
        let args = match &attribute.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            _ => TokenStream::new(),
        };
        bounds = parse(args, attribute.bracket_token.span.join(), errors).map(|(t, b)| Bounds {
            max_threads: t,
            min_blocks_per_sm: b,
            path: attribute.path().clone(),
        });
    }
    bounds
}

/// Parses `max_threads = T, min_blocks_per_sm = B`. Integer literals are
/// checked here, at their span; other constants when the globals are
/// evaluated (`LaunchBounds::checked`).
fn parse(args: TokenStream, span: Span, errors: &mut Vec<Error>) -> Option<(Expr, Option<Expr>)> {
    let mut max_threads: Option<Expr> = None;
    let mut min_blocks_per_sm: Option<Expr> = None;
    let before = errors.len();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        let slot = match key.as_str() {
            "max_threads" => &mut max_threads,
            "min_blocks_per_sm" => &mut min_blocks_per_sm,
            _ => {
                return Err(meta.error(
                    "#[launch_bounds] takes `max_threads = N` (the most threads a block has) and `min_blocks_per_sm = N` (the fewest such blocks an SM must hold)",
                ))
            }
        };
        if slot.is_some() {
            return Err(meta.error(format!("`{key}` is given twice; keep one")));
        }
        *slot = Some(meta.value()?.parse()?);
        Ok(())
    });
    if let Err(error) = syn::parse::Parser::parse2(parser, args) {
        errors.push(error);
    }
    let Some(max_threads) = max_threads else {
        if errors.len() == before {
            errors.push(Error::new(
                span,
                "#[launch_bounds] needs `max_threads = N`, the most threads a block of the kernel has (e.g. `#[launch_bounds(max_threads = 256, min_blocks_per_sm = 1)]`)",
            ));
        }
        return None;
    };
    let literal = |expr: &Expr| match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse::<u32>().ok(),
        _ => None,
    };
    let threads = literal(&max_threads).unwrap_or(1);
    let blocks = min_blocks_per_sm.as_ref().and_then(literal).unwrap_or(0);
    if let Err(error) = LaunchBounds::new(threads, blocks) {
        let at: &dyn quote::ToTokens = match error {
            clustered_abi::BoundsError::MaxThreads(_) => &max_threads,
            clustered_abi::BoundsError::MinBlocks(_)
            | clustered_abi::BoundsError::OverAnSm { .. } => min_blocks_per_sm.as_ref()?,
        };
        errors.push(Error::new_spanned(at, error.to_string()));
        return None;
    }
    (errors.len() == before).then_some((max_threads, min_blocks_per_sm))
}

impl Bounds {
    /// `LaunchBounds::checked(T, B)`: a compile error where a constant is
    /// out of range, at the attribute.
    fn value(&self) -> TokenStream {
        // Every token at the attribute's `max_threads`, so that a failed
        // evaluation points there rather than at the kernel attribute.
        let span = self.max_threads.span();
        let device: TokenStream = crate::runtime::runtime_path()
            .into_iter()
            .map(|mut token| {
                token.set_span(span);
                token
            })
            .collect();
        let max_threads = &self.max_threads;
        let min_blocks = match &self.min_blocks_per_sm {
            Some(expr) => quote!(#expr),
            None => quote!(0),
        };
        quote_spanned!(span=> #device::abi::LaunchBounds::checked(#max_threads, #min_blocks))
    }
}

/// `__clustered_bounds_<entry>` for each of `entries` (the kernel and its
/// schedules): what the builder turns into `.maxntid` and `.minnctapersm`.
pub fn globals(bounds: Option<&Bounds>, entries: &[&Ident]) -> TokenStream {
    let Some(bounds) = bounds else {
        return TokenStream::new();
    };
    let device = crate::runtime::runtime_path();
    let value = bounds.value();
    // At the attribute: an out-of-range constant is reported there.
    let span = bounds.max_threads.span();
    let globals = entries.iter().map(|entry| {
        let global = format_ident!("{}{}", clustered_abi::LAUNCH_BOUNDS_PREFIX, entry);
        quote_spanned! {span=>
            #[doc(hidden)]
            #[no_mangle]
            #[allow(non_upper_case_globals)]
            pub static #global: #device::abi::LaunchBounds = #value;
        }
    });
    let path = &bounds.path;
    quote! {
        #(#globals)*
        const _: () = {
            #[allow(unused_imports)]
            use #path as _;
        };
    }
}

/// The typed handle's `const LAUNCH_BOUNDS` (nothing without bounds: the
/// trait's default is `None`).
pub fn handle_const(bounds: Option<&Bounds>) -> TokenStream {
    let Some(bounds) = bounds else {
        return TokenStream::new();
    };
    let device = crate::runtime::runtime_path();
    let value = bounds.value();
    quote! {
        const LAUNCH_BOUNDS: ::core::option::Option<#device::abi::LaunchBounds> =
            ::core::option::Option::Some(#value);
    }
}

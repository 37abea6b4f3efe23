//! `#[kernel]`: check the signature, then emit the PTX entry point.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, Error, ItemFn, ReturnType};

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut function = match parse_function(item, "#[kernel]", "pub unsafe fn name(args) { .. }") {
        Ok(function) => function,
        Err(tokens) => return tokens,
    };
    let mut errors = Vec::new();
    if !attr.is_empty() {
        errors.push(Error::new_spanned(&attr, "#[kernel] takes no arguments"));
    }
    errors.extend(check_signature(&function, "#[kernel]"));
    // `#[kernel]` above `#[clustered]`: report it here, and drop the
    // `#[clustered]`s so that they do not expand into entry points that the
    // host cannot compile.
    let (clustered, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut function.attrs)
        .into_iter()
        .partition(|a| is_attribute(a, "clustered"));
    function.attrs = kept;
    if !clustered.is_empty() {
        errors.push(Error::new(Span::call_site(), REMOVE_KERNEL));
    }
    if let Some(errors) = report(errors, &function) {
        return errors;
    }
    traced_entry_point(&function)
}

/// What `#[kernel]` together with `#[clustered]` is told.
pub const REMOVE_KERNEL: &str =
    "remove #[kernel]: #[clustered] emits the kernel entry points itself";

/// Parses the annotated item as a function, or returns the error to emit
/// (with the item kept, so that its uses do not add errors of their own).
pub fn parse_function(
    item: TokenStream,
    attribute: &str,
    example: &str,
) -> Result<ItemFn, TokenStream> {
    syn::parse2(item.clone()).map_err(|_| {
        let error = Error::new(
            Span::call_site(),
            format!("{attribute} applies to a kernel function: `{example}`"),
        )
        .to_compile_error();
        quote!(#error #item)
    })
}

/// Is `attr` the attribute `name` (any path ending in it)?
pub fn is_attribute(attr: &Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

/// Every mistake at once, with the function kept as written so that the rest
/// of the crate (and the IDE) still sees it; `None` without mistakes.
pub fn report(errors: Vec<Error>, function: &ItemFn) -> Option<TokenStream> {
    let errors = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })?;
    let errors = errors.to_compile_error();
    Some(quote!(#errors #function))
}

/// The kernel as written, its global accesses traced: what `#[kernel]`
/// emits, and the baseline of every `#[clustered]` kernel.
pub fn traced_entry_point(function: &ItemFn) -> TokenStream {
    let mut function = function.clone();
    // No bypass: the baseline is the kernel as written.
    let errors = crate::trace::trace_global_memory(&mut function.block, &function.sig.inputs, &[]);
    debug_assert!(errors.is_empty(), "only bypassed pointers give errors");
    entry_point(&function)
}

/// `function` as a kernel entry point: a PTX `.entry` on the GPU, a plain
/// `unsafe fn` on the host (the device crate's `entry_point!` picks).
pub fn entry_point(function: &ItemFn) -> TokenStream {
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let name = &sig.ident;
    let inputs = &sig.inputs;
    let runtime = crate::runtime::runtime_path();
    quote! {
        #runtime::entry_point! {
            #(#attrs)*
            #vis unsafe fn #name(#inputs) #block
        }
    }
}

/// The rules every kernel signature obeys, for `#[kernel]` and `#[clustered]`.
pub fn check_signature(function: &ItemFn, attribute: &str) -> Vec<Error> {
    let sig = &function.sig;
    let mut errors = Vec::new();
    if sig.unsafety.is_none() {
        errors.push(Error::new(
            sig.fn_token.span(),
            format!("{attribute} needs an `unsafe fn`: a kernel trusts the raw pointers the host passes; write `unsafe fn {}`", sig.ident),
        ));
    }
    if let Some(asyncness) = sig.asyncness {
        errors.push(Error::new(asyncness.span(), format!("{attribute} cannot be `async`: a kernel runs to completion on the GPU; remove `async`")));
    }
    if let Some(constness) = sig.constness {
        errors.push(Error::new(
            constness.span(),
            format!("{attribute} cannot be `const`; remove `const`"),
        ));
    }
    if let Some(abi) = &sig.abi {
        errors.push(Error::new_spanned(
            abi,
            format!("{attribute} sets the ABI itself; remove `extern ..`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        // `<..>` prints without the where clause: point at whichever exists.
        let generics: &dyn quote::ToTokens = match &sig.generics.where_clause {
            Some(where_clause) if sig.generics.params.is_empty() => where_clause,
            _ => &sig.generics,
        };
        errors.push(Error::new_spanned(
            generics,
            format!("{attribute} cannot be generic: the PTX entry point needs one concrete signature; write a non-generic wrapper that calls a generic function"),
        ));
    }
    if let ReturnType::Type(..) = &sig.output {
        errors.push(Error::new_spanned(
            &sig.output,
            format!("{attribute} returns nothing: write results through a pointer parameter"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(Error::new_spanned(
            variadic,
            format!("{attribute} cannot be variadic"),
        ));
    }
    for input in &sig.inputs {
        if let syn::FnArg::Receiver(receiver) = input {
            errors.push(Error::new_spanned(
                receiver,
                format!("{attribute} cannot take `self`: a kernel is a free function"),
            ));
        }
    }
    errors
}

//! `#[kernel]`: check the signature, then emit the PTX entry point.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Error, ItemFn, ReturnType};

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            return Error::new(
                item.span(),
                "#[kernel] applies to a function: `pub unsafe fn name(args) { .. }`",
            )
            .to_compile_error()
        }
    };
    let mut errors = Vec::new();
    if !attr.is_empty() {
        errors.push(Error::new(attr.span(), "#[kernel] takes no arguments"));
    }
    errors.extend(check_signature(&function, "#[kernel]"));
    if let Some(error) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        let error = error.to_compile_error();
        return quote!(#error #function);
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let name = &sig.ident;
    let inputs = &sig.inputs;
    quote! {
        #(#attrs)*
        #[no_mangle]
        #vis unsafe extern "ptx-kernel" fn #name(#inputs) #block
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
        errors.push(Error::new(
            abi.span(),
            format!("{attribute} sets the ABI itself; remove `extern ..`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(Error::new(
            sig.generics.span(),
            format!("{attribute} cannot be generic: the PTX entry point needs one concrete signature; write a non-generic wrapper that calls a generic function"),
        ));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        errors.push(Error::new(
            ty.span(),
            format!("{attribute} returns nothing: write results through a pointer parameter"),
        ));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(Error::new(
            variadic.span(),
            format!("{attribute} cannot be variadic"),
        ));
    }
    for input in &sig.inputs {
        if let syn::FnArg::Receiver(receiver) = input {
            errors.push(Error::new(
                receiver.span(),
                format!("{attribute} cannot take `self`: a kernel is a free function"),
            ));
        }
    }
    errors
}

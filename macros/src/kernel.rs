//! `#[kernel]`: check the signature, then emit the PTX entry point.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, Error, ItemFn, ReturnType, Type};

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_kernel(attr, item, true)
}

/// `#[kernel]`, with the pool-task items (`crate::task`) where `tasks` and
/// the parameters allow (a pool kernel of `task_pool!` is none).
pub fn expand_kernel(attr: TokenStream, item: TokenStream, tasks: bool) -> TokenStream {
    let mut function = match parse_function(item, "#[kernel]", "pub unsafe fn name(args) { .. }") {
        Ok(function) => function,
        Err(tokens) => return tokens,
    };
    let mut errors = Vec::new();
    if !attr.is_empty() {
        errors.push(Error::new_spanned(&attr, "#[kernel] takes no arguments"));
    }
    errors.extend(check_signature(&function, "#[kernel]"));
    let bounds = crate::bounds::take(&mut function, &mut errors);
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
    let entry = traced_entry_point(&function);
    let accesses = crate::access::analyse(&function);
    let registry = crate::registry::registry(&function, &[], &accesses, &[], bounds.as_ref());
    let bounds = crate::bounds::globals(bounds.as_ref(), &[&function.sig.ident]);
    let mut warnings = crate::lint::wrapping_index(&function);
    warnings.extend(crate::lint::divergent_constant_reads(&function, &accesses));
    let task = tasks.then(|| crate::task::task_support(&function));
    quote!(#entry #bounds #registry #task #warnings)
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
    let guard = guard(function);
    let runtime = crate::runtime::runtime_path();
    quote! {
        #guard
        #runtime::entry_point! {
            #(#attrs)*
            #vis unsafe fn #name(#inputs) #block
        }
    }
}

/// A hidden function, never called, that checks what the signature alone
/// does not show:
///
/// - The kernel is a free function. An attribute cannot see that it sits in
///   an `impl` block, where it would be a method (generic, if the impl is)
///   and the contract static is refused. The guard names itself by a bare
///   path: outside an `impl` that is the guard; inside, associated functions
///   are only reachable through `Self::`, so rustc reports "cannot find value
///   `<kernel>_is_a_kernel_move_it_out_of_the_impl_block`" at the kernel's
///   name.
/// - Each parameter is `Copy`: the host copies its bytes into `.param` space,
///   so a type that owns something (a `Vec`, a `Box`) cannot arrive intact.
fn guard(function: &ItemFn) -> TokenStream {
    let name = &function.sig.ident;
    let guard = quote::format_ident!(
        "{}_is_a_kernel_move_it_out_of_the_impl_block",
        name,
        span = name.span()
    );
    let copies = function.sig.inputs.iter().filter_map(|input| match input {
        syn::FnArg::Typed(typed) if !is_plainly_copy(&typed.ty) => {
            let ty = &typed.ty;
            Some(quote::quote_spanned!(ty.span()=> kernel_parameters_are_copied_to_the_gpu::<#ty>();))
        }
        _ => None,
    });
    let copies: Vec<_> = copies.collect();
    let copy_check = (!copies.is_empty()).then(|| {
        quote! {
            fn kernel_parameters_are_copied_to_the_gpu<T: ::core::marker::Copy>() {}
            #(#copies)*
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, dead_code, clippy::all)]
        fn #guard() {
            let _ = #guard;
            #copy_check
        }
    }
}

/// Raw pointers and primitive numbers: `Copy` without asking rustc.
fn is_plainly_copy(ty: &Type) -> bool {
    const PRIMITIVES: &[&str] = &[
        "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize", "f32", "f64",
        "bool",
    ];
    match ty {
        Type::Ptr(_) => true,
        Type::Path(path) => path
            .path
            .get_ident()
            .is_some_and(|ident| PRIMITIVES.iter().any(|p| ident == p)),
        _ => false,
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
        match input {
            syn::FnArg::Receiver(receiver) => errors.push(Error::new_spanned(
                receiver,
                format!("{attribute} cannot take `self`: a kernel is a free function; move it out of the `impl` block"),
            )),
            syn::FnArg::Typed(typed) => errors.extend(check_parameter_type(&typed.ty, attribute)),
        }
    }
    errors
}

/// What the host can pass as a kernel parameter: the bytes of a `Copy`
/// value with a C layout, copied into the PTX `.param` space. Numbers, raw
/// pointers, arrays of these and named types pass here (named types are
/// checked for `Copy` by [`entry_point`]); the rest is an error naming the fix.
fn check_parameter_type(ty: &Type, attribute: &str) -> Option<Error> {
    let message = match ty {
        Type::Paren(inner) => return check_parameter_type(&inner.elem, attribute),
        Type::Group(inner) => return check_parameter_type(&inner.elem, attribute),
        Type::Array(array) => return check_parameter_type(&array.elem, attribute),
        Type::Path(_) | Type::Ptr(_) | Type::Macro(_) | Type::Infer(_) | Type::Verbatim(_) => {
            return None
        }
        // `impl Trait` makes the function generic: it would have no PTX entry.
        Type::ImplTrait(_) => format!("{attribute} parameters cannot be `impl Trait`: the PTX entry point needs one concrete type; name the type (e.g. `*const f32`, `u32`)"),
        Type::Reference(reference) => {
            let (mutability, pointer) = match reference.mutability {
                Some(_) => ("&mut ", "*mut"),
                None => ("&", "*const"),
            };
            match &*reference.elem {
                // A fat pointer: the host would have to pass two values.
                Type::Slice(slice) => {
                    let element = &slice.elem;
                    format!(
                        "{attribute} parameters cannot be slices (`{mutability}[T]`): the host passes one device pointer; take `{pointer} {}` and the length as another parameter",
                        quote!(#element)
                    )
                }
                elem => format!(
                    "{attribute} parameters cannot be references: the host passes a device pointer, which Rust's rules for `{mutability}T` do not describe; take `{pointer} {}`",
                    quote!(#elem)
                ),
            }
        }
        Type::Slice(_) | Type::TraitObject(_) => format!("{attribute} parameters have a size known to the host: take a `*const` pointer to the data"),
        Type::Tuple(_) => format!("{attribute} parameters cannot be tuples: a tuple has no C layout the host can match; pass its fields as separate parameters, or a `#[repr(C)]` struct that is `Copy`"),
        Type::BareFn(_) => format!("{attribute} parameters cannot be function pointers: a host address is not code on the GPU; call the function in the kernel"),
        Type::Never(_) => format!("{attribute} parameters cannot be `!`"),
        _ => format!("{attribute} parameters are numbers, raw pointers or `Copy` `#[repr(C)]` structs"),
    };
    Some(Error::new_spanned(ty, message))
}

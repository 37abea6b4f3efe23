//! `#[clustered(...)]`: parse every schedule on the function, check them,
//! then emit the baseline kernel and one kernel per schedule.

mod analyse;
mod expand;
mod parse;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Attribute, Error, ItemFn};

use crate::kernel::check_signature;

/// Is this attribute another `#[clustered(..)]` on the same function?
fn is_clustered(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "clustered")
}

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = Error::new(
                Span::call_site(),
                "#[clustered] applies to a kernel function: `#[clustered(..)] pub unsafe fn name(args) { .. }`",
            );
            let error = error.to_compile_error();
            return quote!(#error #item);
        }
    };
    let mut errors = check_signature(&function, "#[clustered]");

    // The first attribute is the one being expanded; the others are still on
    // the function. Take them all, so one expansion emits every schedule.
    let mut attributes = vec![(attr, Span::call_site())];
    let mut kept = Vec::new();
    for a in std::mem::take(&mut function.attrs) {
        if is_clustered(&a) {
            let args = match &a.meta {
                syn::Meta::List(list) => list.tokens.clone(),
                _ => TokenStream::new(),
            };
            // `[clustered(..)]`: on stable, `a.span()` would be just the `#`.
            attributes.push((args, a.bracket_token.span.join()));
        } else if a
            .path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "kernel")
        {
            errors.push(Error::new_spanned(
                &a,
                "remove #[kernel]: #[clustered] emits the kernel entry points itself",
            ));
        } else {
            kept.push(a);
        }
    }
    function.attrs = kept;

    let parameters = analyse::parameters(&function, &mut errors);
    let schedules: Vec<_> = attributes
        .into_iter()
        .map(|(args, span)| parse::parse_schedule(args, span, &mut errors))
        .collect();

    let original = &function.sig.ident;
    let mut names: Vec<syn::Ident> = Vec::new();
    let mut kernels = Vec::new();
    for schedule in &schedules {
        let name = match &schedule.name {
            Some(name) => name.clone(),
            None if schedules.len() == 1 => format_ident!("{}_clustered", original),
            None => {
                errors.push(Error::new(
                    schedule.span,
                    format!(
                        "several schedules on one kernel need a `name = ..` each, e.g. `name = {original}_{}`",
                        format!("{:?}", schedule.binding).to_lowercase()
                    ),
                ));
                continue;
            }
        };
        if &name == original || names.contains(&name) {
            errors.push(Error::new(
                name.span(),
                format!(
                    "the kernel name `{name}` is already taken; give this schedule another `name`"
                ),
            ));
            continue;
        }
        names.push(name.clone());
        analyse::check_schedule(schedule, &parameters, &mut errors);
        let mut body = (*function.block).clone();
        let facts = analyse::rewrite_body(
            &mut body,
            &format_ident!("__cta"),
            &name,
            &schedule.bypass,
            &mut errors,
        );
        crate::trace::trace_global_memory(&mut body, &function.sig.inputs);
        kernels.push(expand::schedule(
            &function,
            schedule,
            &name,
            &body,
            &facts,
            &parameters,
        ));
    }

    if !errors.is_empty() {
        // Report every mistake at once, and keep the function as written so
        // the rest of the crate (and the IDE) still sees it.
        let errors = errors.into_iter().map(|e| e.to_compile_error());
        return quote!(#(#errors)* #function);
    }
    let baseline = expand::baseline(&function);
    quote! {
        #baseline
        #(#kernels)*
    }
}

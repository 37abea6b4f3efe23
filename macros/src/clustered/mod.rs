//! `#[clustered(...)]`: parse every schedule on the function, check them,
//! then emit the baseline kernel and one kernel per schedule.

pub(crate) mod analyse;
pub(crate) mod expand;
mod parse;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Error;

use crate::kernel::{check_signature, is_attribute, parse_function, report, REMOVE_KERNEL};

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let example = "#[clustered(..)] pub unsafe fn name(args) { .. }";
    let mut function = match parse_function(item, "#[clustered]", example) {
        Ok(function) => function,
        Err(tokens) => return tokens,
    };
    let mut errors = check_signature(&function, "#[clustered]");
    let bounds = crate::bounds::take(&mut function, &mut errors);

    // The first attribute is the one being expanded; the others are still on
    // the function. Take them all, so one expansion emits every schedule.
    let mut attributes = vec![(attr, Span::call_site())];
    let mut kept = Vec::new();
    for a in std::mem::take(&mut function.attrs) {
        if is_attribute(&a, "clustered") {
            let args = match &a.meta {
                syn::Meta::List(list) => list.tokens.clone(),
                _ => TokenStream::new(),
            };
            // `[clustered(..)]`: on stable, `a.span()` would be just the `#`.
            attributes.push((args, a.bracket_token.span.join()));
        } else if is_attribute(&a, "kernel") {
            errors.push(Error::new_spanned(&a, REMOVE_KERNEL));
        } else {
            kept.push(a);
        }
    }
    function.attrs = kept;

    let parameters = analyse::parameters(&function, &mut errors);
    let parsed: Vec<_> = attributes
        .into_iter()
        .map(|(args, span)| parse::parse_schedule(args, span, &mut errors))
        .collect();
    let accesses = crate::access::analyse(&function);
    let has_auto = parsed.iter().any(|s| s.auto);
    let (schedules, mut auto) = with_proposals(parsed, &accesses, &function.sig.ident, &mut errors);

    let original = &function.sig.ident;
    let returns_early = analyse::returns_early(&function.block);
    let mut names: Vec<syn::Ident> = Vec::new();
    let mut registered = Vec::new();
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
                        schedule.binding.name()
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
        let custom = match &schedule.indexing {
            parse::Indexing::Custom(path) => Some(path.clone()),
            _ => None,
        };
        registered.push((name.clone(), custom));
        analyse::check_schedule(schedule, &parameters, &mut errors);
        // The task protocol (`run::end_task`) only where a thread can leave
        // its task early: a persistent schedule of a body that returns.
        let task_protocol = schedule.binding.is_persistent() && returns_early;
        let (body, mut facts) = analyse::task_body(
            &function,
            &expand::cta(),
            &name,
            task_protocol,
            false,
            &schedule.bypass,
            &mut errors,
        );
        facts.returns_early = returns_early;
        kernels.push(expand::schedule(
            &function,
            schedule,
            &name,
            &body,
            &facts,
            &parameters,
        ));
    }

    // Schedules written beside `#[clustered(auto)]` are candidates too: the
    // user wrote them because they may win (Jacobi's hand-written prefetch
    // hook did, and no proposal can know it).
    if has_auto {
        for name in &names {
            if !auto.contains(name) {
                auto.push(name.clone());
            }
        }
    }

    // One generated prefetch hook serves every schedule that asks for it.
    let generated_prefetch = schedules.iter().find_map(|s| match &s.prefetch {
        Some(parse::Prefetch::Generated(span)) => Some(*span),
        _ => None,
    });
    let prefetch_hook = generated_prefetch.and_then(|span| {
        let hook = expand::generated_prefetch_hook(original);
        crate::access::prefetch_hook(&accesses, &hook, &parameters.names, &parameters.types)
            .map_err(|why| {
                errors.push(Error::new(
                    span,
                    format!("`prefetch = auto` has nothing to prefetch: {why}; write a hook (`prefetch = path::to::hook`) or remove it"),
                ))
            })
            .ok()
    });

    if let Some(errors) = report(errors, &function) {
        return errors;
    }
    let baseline = crate::kernel::traced_entry_point(&function);
    let registry =
        crate::registry::registry(&function, &registered, &accesses, &auto, bounds.as_ref());
    let entries: Vec<_> = std::iter::once(original).chain(&names).collect();
    let bounds = crate::bounds::globals(bounds.as_ref(), &entries);
    let mut warnings = crate::lint::wrapping_index(&function);
    warnings.extend(crate::lint::divergent_constant_reads(&function, &accesses));
    if has_auto || generated_prefetch.is_some() {
        warnings.extend(crate::lint::unseen_accesses(&function, &accesses));
    }
    let task = crate::task::task_support(&function);
    quote! {
        #baseline
        #(#kernels)*
        #bounds
        #registry
        #prefetch_hook
        #task
        #warnings
    }
}

/// Replaces `#[clustered(auto)]` by the schedules the access analysis
/// proposes (`<kernel>_auto_<tag>`), except those an explicit schedule
/// already is; returns the schedules to emit and the names of the
/// automatic family (which may name explicit schedules).
fn with_proposals(
    parsed: Vec<parse::Schedule>,
    accesses: &crate::access::Analysis,
    kernel: &syn::Ident,
    errors: &mut Vec<Error>,
) -> (Vec<parse::Schedule>, Vec<syn::Ident>) {
    let (autos, explicit): (Vec<_>, Vec<_>) = parsed.into_iter().partition(|s| s.auto);
    let mut schedules = explicit.clone();
    let mut family = Vec::new();
    for (i, auto) in autos.iter().enumerate() {
        if i > 0 {
            errors.push(Error::new(
                auto.span,
                "`#[clustered(auto)]` is given twice; keep one",
            ));
            continue;
        }
        for proposal in crate::access::proposals(accesses) {
            let mut candidate = parse::Schedule::proposed(&proposal, auto.span);
            match explicit.iter().find(|s| s.same_as(&candidate)) {
                Some(existing) => family.extend(existing.name.clone()),
                None => {
                    let name = format_ident!("{}_auto_{}", kernel, proposal.tag);
                    candidate.name = Some(name.clone());
                    family.push(name);
                    schedules.push(candidate);
                }
            }
        }
    }
    (schedules, family)
}

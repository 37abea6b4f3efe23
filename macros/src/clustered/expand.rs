//! Code generation for `#[clustered]`: the baseline kernel, and per schedule
//! a task function, a contract global and the new entry point.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemFn};

use super::analyse::{BodyFacts, Parameters};
use super::parse::{Binding, Indexing, Schedule};

/// The unclustered kernel, exactly as written: the baseline every schedule is
/// compared with, and what a plain launch runs.
pub fn baseline(function: &ItemFn) -> TokenStream {
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

/// One schedule's kernel. `body` is already rewritten to read `cta`.
pub fn schedule(
    function: &ItemFn,
    schedule: &Schedule,
    name: &Ident,
    body: &syn::Block,
    facts: &BodyFacts,
    parameters: &Parameters,
) -> TokenStream {
    let vis = &function.vis;
    let attrs = function.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let task = format_ident!("__{}_task", name);
    let contract = format_ident!("__clustered_contract_{}", name);
    let Parameters { names, types } = parameters;
    let cta = format_ident!("__cta");
    let launch = format_ident!("__launch");
    let device = quote!(::clustered_device);

    let (binding, binding_value) = match schedule.binding {
        Binding::Reorder => (quote!(#device::abi::Binding::Reorder), 0u32),
        Binding::Redirect => (quote!(#device::abi::Binding::Redirect), 1),
        Binding::Agents => (quote!(#device::abi::Binding::Agents), 2),
    };
    let _ = binding_value;
    let (indexing_kind, tile) = match &schedule.indexing {
        Indexing::RowMajor => (quote!(ROW_MAJOR), [0, 0]),
        Indexing::ColumnMajor => (quote!(COLUMN_MAJOR), [0, 0]),
        Indexing::Tile { width, height } => (quote!(TILE), [*width, *height]),
        Indexing::Custom(_) => (quote!(CUSTOM), [0, 0]),
    };
    let [tile_width, tile_height] = tile;
    let chunk = schedule.chunk.map_or(1, |(n, _)| n);
    let active = schedule.active.map_or(0, |(n, _)| n);

    // v -> the original CTA, for the chosen indexing.
    let to_cta = match &schedule.indexing {
        Indexing::Custom(path) => quote! {
            |v: u32| #device::cta::Cta::new(#path(v, #launch.delinearize.grid()), #launch.delinearize.grid())
        },
        _ => quote! {
            |v: u32| #device::cta::Cta::new(#launch.delinearize.cta(v), #launch.delinearize.grid())
        },
    };
    let run_task = quote!(#task(to_cta(v), #(#names),*));
    let entry_body = match schedule.binding {
        Binding::Reorder => quote! {
            let v = #device::run::reordered(&#launch);
            #run_task;
        },
        Binding::Redirect => quote! {
            let v = #device::run::redirected(&#launch);
            #run_task;
        },
        Binding::Agents => {
            let separate = facts.shares_within_cta;
            let prefetch = match &schedule.prefetch {
                Some(hook) => quote!(|v: u32| #hook(to_cta(v), #(#names),*)),
                None => quote!(|_: u32| {}),
            };
            quote! {
                #device::run::agents(&#launch, #chunk, #separate, |v: u32| #run_task, #prefetch);
            }
        }
    };
    let doc = format!(
        "Clustered `{}`: binding {:?}, indexing {:?}. Launch it with the host's `launch_clustered`.",
        function.sig.ident, schedule.binding, schedule.indexing
    );

    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        unsafe fn #task(#cta: #device::cta::Cta, #(#names: #types),*) #body

        #[doc(hidden)]
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static #contract: #device::abi::KernelContract = #device::abi::KernelContract::new(
            #binding,
            #device::abi::indexing_kind::#indexing_kind,
            [#tile_width, #tile_height],
            #chunk,
            #active,
        );

        #(#attrs)*
        #[doc = #doc]
        #[no_mangle]
        #vis unsafe extern "ptx-kernel" fn #name(#(#names: #types,)* #launch: #device::abi::ClusterLaunch) {
            let to_cta = #to_cta;
            #entry_body
        }
    }
}

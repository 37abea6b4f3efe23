//! Code generation for `#[clustered]`, per schedule: a task function, a
//! contract global and the new entry point (the baseline is
//! `crate::kernel::traced_entry_point`).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, ItemFn};

use super::analyse::{self, BodyFacts, Parameters};
use super::parse::{Binding, Indexing, Prefetch, Schedule, Tail};

/// The task function's CTA parameter, which the rewritten body reads.
///
/// Every name the expansion binds (this parameter, the entry point's
/// `__launch`, the closures' `__v`, the local `__to_cta`) is spanned at
/// `Span::mixed_site()`: locals resolve where the macro defines them, so a
/// user's parameter or local of the same name is another variable, neither
/// shadowing nor shadowed.
pub fn cta() -> Ident {
    generated("__cta")
}

/// The hook that `prefetch = auto` calls (`access::prefetch_hook`), one per
/// kernel.
pub fn generated_prefetch_hook(kernel: &Ident) -> Ident {
    format_ident!("__{}_prefetch_next", kernel, span = kernel.span())
}

/// A local or parameter of the expansion, invisible to the user's code.
fn generated(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
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
    // Items resolve at the call site whatever their span: spanned at the
    // schedule's name, a user item of the same name is reported there
    // ("defined multiple times"), never silently used. The contract keeps its
    // name: the host finds it by symbol.
    let task = format_ident!("__{}_task", name, span = name.span());
    let contract = format_ident!(
        "{}{}",
        clustered_abi::CONTRACT_PREFIX,
        name,
        span = name.span()
    );
    let baseline_link = format_ident!(
        "{}{}",
        clustered_abi::BASELINE_LINK_PREFIX,
        name,
        span = name.span()
    );
    let baseline_name = syn::LitByteStr::new(
        function.sig.ident.to_string().as_bytes(),
        function.sig.ident.span(),
    );
    let Parameters {
        names,
        types,
        mutability,
    } = parameters;
    let cta = cta();
    let launch = generated("__launch");
    let v = generated("__v");
    let to_cta = generated("__to_cta");
    let device = crate::runtime::runtime_path();

    let binding = match schedule.binding {
        Binding::Reorder => quote!(#device::abi::Binding::Reorder),
        Binding::Redirect => quote!(#device::abi::Binding::Redirect),
        Binding::Agents => quote!(#device::abi::Binding::Agents),
        Binding::Persistent => quote!(#device::abi::Binding::Persistent),
        Binding::Stride => quote!(#device::abi::Binding::Stride),
    };
    let (indexing_kind, tile) = match &schedule.indexing {
        Indexing::RowMajor => (quote!(ROW_MAJOR), [0, 0]),
        Indexing::ColumnMajor => (quote!(COLUMN_MAJOR), [0, 0]),
        Indexing::Tile { width, height } => (quote!(TILE), [*width, *height]),
        Indexing::ColumnTile { width, height } => (quote!(COLUMN_TILE), [*width, *height]),
        Indexing::Sawtooth { width, height } => (quote!(SAWTOOTH), [*width, *height]),
        Indexing::Custom(_) => (quote!(CUSTOM), [0, 0]),
    };
    let [tile_width, tile_height] = tile;
    // The kind as the constant entries are compiled for (`abi::indexing_kind`).
    let indexing_kind_const = quote!(#device::abi::indexing_kind::#indexing_kind);
    let chunk = schedule.chunk.map_or(1, |(n, _)| n);
    let with_waves = schedule.waves.map(|(waves, _)| quote!(.with_waves(#waves)));
    let with_tail = schedule.tail.map(|(tail, _)| {
        let tail = match tail {
            Tail::Claims => quote!(Claims),
            Tail::Blocks => quote!(Blocks),
        };
        quote!(.with_tail(#device::abi::Tail::#tail))
    });
    let active = schedule.active.map_or(0, |(n, _)| n);

    // v -> the original CTA, for the chosen indexing.
    let to_cta_closure = match &schedule.indexing {
        Indexing::Custom(path) => quote! {
            |#v: u32| #device::cta::Cta::new(#path(#v, #launch.delinearize.grid()), #launch.delinearize.grid())
        },
        _ => quote! {
            |#v: u32| #device::cta::Cta::new(
                #launch.delinearize.cta_as::<{ #indexing_kind_const }>(#v),
                #launch.delinearize.grid(),
            )
        },
    };
    // The persistent loops hand each task (and the prefetch hook) its CTA,
    // stepped from the last one's in row- and column-major order. Tiles and
    // custom indexings map the linear id in the task instead: stepping a
    // tile costs a full delinearization anyway, and computed in the loop it
    // changed the naive SGEMM agents' register allocation (40 to 32,
    // `scripts/ptx-report.sh`) and their speed from 0.54x to 0.26x of the
    // baseline (bench, H100, docs/BENCHMARKS.md).
    let maps_in_task = matches!(
        schedule.indexing,
        Indexing::Custom(_)
            | Indexing::Tile { .. }
            | Indexing::ColumnTile { .. }
            | Indexing::Sawtooth { .. }
    );
    // `ends_tasks`: the task function's value (`run::NoReturnInAMacro`) is
    // dropped.
    let ends_tasks = facts.shares_within_cta && schedule.binding.is_persistent();
    let call_with_cta = |function: &dyn quote::ToTokens, drops_value: bool| {
        let call = if maps_in_task {
            quote!(#function(#to_cta(#v), #(#names),*))
        } else {
            quote!(#function(#cta, #(#names),*))
        };
        let call = if drops_value {
            quote!({ #call; })
        } else {
            call
        };
        if maps_in_task {
            quote!(|#v: u32, _: #device::cta::Cta| #call)
        } else {
            quote!(|_: u32, #cta: #device::cta::Cta| #call)
        }
    };
    let needs_to_cta =
        matches!(schedule.binding, Binding::Reorder | Binding::Redirect) || maps_in_task;
    let define_to_cta = needs_to_cta.then(|| quote!(let #to_cta = #to_cta_closure;));
    let run_task = call_with_cta(&task, ends_tasks);
    let prefetch = match &schedule.prefetch {
        Some(Prefetch::Hook(hook)) => call_with_cta(hook, false),
        Some(Prefetch::Generated(_)) => {
            call_with_cta(&generated_prefetch_hook(&function.sig.ident), false)
        }
        None => quote!(|_: u32, _: #device::cta::Cta| {}),
    };
    // A persistent body that shares memory or waits at barriers ends each
    // task with a barrier, in the task function itself: the task protocol's
    // when it can return early (its `return`s end the task the same way
    // first: `analyse::end_tasks_at_returns`), else a plain one.
    // Such a task function returns `run::NoReturnInAMacro`, which only the
    // macro's own ends give: a `return` hidden in a macro does not compile.
    let end_task = ends_tasks.then(|| {
        let value = analyse::task_end();
        if facts.returns_early {
            quote!(#device::run::end_task(); #value)
        } else {
            quote!(#device::run::separate_tasks(); #value)
        }
    });
    let task_output = ends_tasks.then(|| {
        let ends = analyse::task_end();
        quote!(-> #ends)
    });
    let entry_body = match schedule.binding {
        Binding::Reorder => quote! {
            #task(#device::run::reordered(&#launch, #to_cta), #(#names),*);
        },
        Binding::Redirect => quote! {
            #task(#device::run::redirected(&#launch, #to_cta), #(#names),*);
        },
        Binding::Stride => {
            let distance = schedule.prefetch_distance.map_or(1, |(n, _)| n);
            // Only the tail as blocks is compiled for its kind
            // (`run::strided`'s documentation says why).
            let strided = match schedule.tail {
                None => quote!(strided),
                Some((Tail::Claims, _)) => quote!(strided_then_claimed),
                Some((Tail::Blocks, _)) => {
                    quote!(strided_then_blocks::<{ #indexing_kind_const }>)
                }
            };
            quote! {
                #device::run::#strided(&#launch, #distance, #run_task, #prefetch);
            }
        }
        Binding::Agents | Binding::Persistent => quote! {
            #device::run::agents::<{ #indexing_kind_const }>(&#launch, #chunk, #run_task, #prefetch);
        },
    };
    // The schedule as written in the attribute, e.g. `indexing = tile(4, 2)`.
    let indexing = match &schedule.indexing {
        Indexing::RowMajor => "row_major".to_string(),
        Indexing::ColumnMajor => "column_major".to_string(),
        Indexing::Tile { width, height } => format!("tile({width}, {height})"),
        Indexing::ColumnTile { width, height } => format!("column_tile({width}, {height})"),
        Indexing::Sawtooth { width, height } => format!("sawtooth({width}, {height})"),
        Indexing::Custom(path) => format!("custom({})", quote!(#path).to_string().replace(' ', "")),
    };
    let tail = schedule.tail.map_or(String::new(), |(tail, _)| {
        format!(", `tail = {}`", tail.name())
    });
    let doc = format!(
        " Clustered `{}`: `binding = {}`, `indexing = {indexing}`{tail}. Launch it with the host's `Gpu::plan_clustered` and `Gpu::launch_plan`.",
        function.sig.ident,
        schedule.binding.name(),
    );
    // A paragraph of its own after the function's documentation.
    let separator = function
        .attrs
        .iter()
        .any(|a| a.path().is_ident("doc"))
        .then(|| quote!(#[doc = ""]));

    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(non_snake_case, unreachable_code, clippy::too_many_arguments)]
        unsafe fn #task(#cta: #device::cta::Cta, #(#mutability #names: #types),*) #task_output {
            #device::trace::begin_task(&#cta);
            #body
            #end_task
        }

        #[doc(hidden)]
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static #contract: #device::abi::KernelContract = #device::abi::KernelContract::new(
            #binding,
            #device::abi::indexing_kind::#indexing_kind,
            [#tile_width, #tile_height],
            #chunk,
            #active,
        )#with_waves #with_tail;

        // The kernel this schedule was made from, by name: the host keeps
        // the schedule at that kernel's occupancy (`clustered_host::Module`).
        #[doc(hidden)]
        #[no_mangle]
        #[allow(non_upper_case_globals)]
        pub static #baseline_link: [u8; #baseline_name.len()] = *#baseline_name;

        #device::entry_point! {
            #(#attrs)*
            #separator
            #[doc = #doc]
            #[allow(clippy::too_many_arguments)]
            #vis unsafe fn #name(#(#names: #types,)* #launch: #device::abi::ClusterLaunch) {
                #define_to_cta
                #entry_body
            }
        }
    }
}

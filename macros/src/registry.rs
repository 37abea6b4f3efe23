//! The typed handles of a kernel (host only): a type named as the kernel
//! function that implements `clustered_device::entry::KernelFn` for its
//! signature and lists its entries, so that no code restates a generated
//! name, pairs a function with another's contract, or passes arguments of the
//! wrong count or type.
//!
//! For `fn k(a: *const f32, c: *mut f32, n: u32)` with schedule `k_agents`:
//!
//! ```text
//! pub struct k {}                       // the type namespace: no clash with fn k
//! impl KernelFn for k { type Args<'a, B> = (B::In<'a, f32>, B::Out<'a, f32>, u32); .. }
//! impl k {
//!     pub const KERNEL: Entry<k>;       // the baseline
//!     pub const k_agents: Entry<k>;     // one per schedule
//!     pub const SCHEDULES: &[Entry<k>];
//!     pub fn schedule(name: &str) -> Result<Entry<k>, UnknownSchedule>;
//! }
//! ```

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Error, FnArg, Ident, ItemFn, Pat, Type};

/// Names of the registry's own items, which a schedule cannot take: the
/// handle's, its pool task's (`crate::task::RUN_TASK`) and, on a pool
/// kernel, `task_pool!`'s (`crate::task::POOL_ITEMS`).
const RESERVED: &[&str] = &[
    "KERNEL",
    "SCHEDULES",
    "schedule",
    "ACCESSES",
    "AUTO",
    crate::task::RUN_TASK,
];

/// How a parameter is passed.
enum Kind<'a> {
    /// `*const T`: a buffer the kernel reads.
    In(&'a Type),
    /// `*mut T`: a buffer the kernel writes.
    Out(&'a Type),
    /// Anything else, by value.
    Scalar,
}

fn kind(ty: &Type) -> Kind<'_> {
    match ty {
        Type::Ptr(ptr) if ptr.mutability.is_some() => Kind::Out(&ptr.elem),
        Type::Ptr(ptr) => Kind::In(&ptr.elem),
        Type::Paren(inner) => kind(&inner.elem),
        Type::Group(inner) => kind(&inner.elem),
        _ => Kind::Scalar,
    }
}

/// The registry of `function` (whose entry is its own name) and its
/// `schedules`: each schedule's name and its `custom(..)` indexing, if any.
///
/// `accesses` is what the access analysis read in the body (the handle's
/// `ACCESSES`), `auto` the schedules of `#[clustered(auto)]` (its `AUTO`,
/// after the baseline).
pub fn registry(
    function: &ItemFn,
    schedules: &[(Ident, Option<syn::Path>)],
    accesses: &crate::access::Analysis,
    auto: &[Ident],
    bounds: Option<&crate::bounds::Bounds>,
) -> TokenStream {
    let mut errors = Vec::new();
    for (name, _) in schedules {
        if RESERVED
            .iter()
            .chain(crate::task::POOL_ITEMS)
            .any(|reserved| name == reserved)
        {
            errors.push(Error::new(
                name.span(),
                format!("`{name}` names an item of the kernel's typed handle (`{}::{name}`); give the schedule another `name`", function.sig.ident),
            ));
        }
    }
    if let Some(error) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        return error.to_compile_error();
    }

    let device = crate::runtime::runtime_path();
    let entry = quote!(#device::entry);
    let kernel = &function.sig.ident;
    let vis = &function.vis;
    // Internal names: locals are hygienic (mixed site); the generic
    // parameters are prefixed, as a type in the user's signature may be
    // called `B`.
    let local = |name: &str| Ident::new(name, Span::mixed_site());
    let (args, visitor, buffers, raw, launch) = (
        local("args"),
        local("visitor"),
        local("buffers"),
        local("raw"),
        local("launch"),
    );
    let backend = format_ident!("__ClusteredBackend");
    let lifetime = syn::Lifetime::new("'__clustered", Span::call_site());

    let mut arg_types = Vec::new();
    let mut raw_types = Vec::new();
    let mut bindings = Vec::new();
    let mut visits = Vec::new();
    let mut raws = Vec::new();
    let mut fields = Vec::new();
    let typed = function.sig.inputs.iter().filter_map(|input| match input {
        FnArg::Typed(typed) => Some(typed),
        FnArg::Receiver(_) => None,
    });
    for (index, typed) in typed.enumerate() {
        let ty = &*typed.ty;
        let name = match &*typed.pat {
            Pat::Ident(ident) => ident.ident.to_string(),
            _ => format!("parameter {index}"),
        };
        let value = Ident::new(&format!("arg{index}"), Span::mixed_site());
        let field = syn::Index::from(index);
        let span = ty.span();
        match kind(ty) {
            Kind::In(elem) => {
                arg_types.push(quote!(<#backend as #entry::Backend>::In<#lifetime, #elem>));
                visits.push(quote_spanned!(span=> #visitor.input(#name, #value);));
                raws.push(quote!(#buffers.input(#name, #value)));
            }
            Kind::Out(elem) => {
                arg_types.push(quote!(<#backend as #entry::Backend>::Out<#lifetime, #elem>));
                visits.push(quote_spanned!(span=> #visitor.output(#name, #value);));
                raws.push(quote!(#buffers.output(#name, #value)));
            }
            Kind::Scalar => {
                arg_types.push(quote!(#ty));
                // Spanned at the type: a parameter that is not a `Scalar`
                // is reported there.
                visits.push(quote_spanned!(span=> #visitor.scalar(#name, #value);));
                raws.push(quote!(#value));
            }
        }
        raw_types.push(quote!(#ty));
        bindings.push(value);
        fields.push(quote!(#raw.#field));
    }

    let name = kernel.to_string();
    let call = |function: &Ident, with_launch: bool| {
        let launch_arg = with_launch.then(|| quote!(#launch));
        let comma = (with_launch && !fields.is_empty()).then(|| quote!(,));
        quote! {
            |#raw: <#kernel as #entry::KernelFn>::Raw, #launch: #device::abi::ClusterLaunch| {
                let _ = &#launch;
                // SAFETY: `Entry::call_on_cpu`'s caller meets the kernel's
                // conditions.
                unsafe { #function(#(#fields),* #comma #launch_arg) }
            }
        }
    };
    let baseline = call(kernel, false);
    let schedule_consts = schedules.iter().map(|(schedule, indexing)| {
        let contract = format_ident!("{}{}", clustered_abi::CONTRACT_PREFIX, schedule);
        let call = call(schedule, true);
        let entry_name = schedule.to_string();
        let with_indexing = indexing.as_ref().map(|path| {
            quote!(.__with_indexing(#path as #device::mapping::CustomIndexing))
        });
        let doc = format!(" The schedule `{entry_name}` of [`{name}`](fn@{name}).");
        quote! {
            #[doc = #doc]
            pub const #schedule: #entry::Entry<Self> = {
                let cpu = #call;
                // SAFETY: the entry, its contract and its function, as emitted together.
                unsafe { #entry::Entry::__new(#entry_name, ::core::option::Option::Some(&#contract), cpu) }
                    #with_indexing
            };
        }
    });
    let listed = schedules.iter().map(|(s, _)| quote!(Self::#s));
    let doc = format!(
        " Typed entry points of the kernel [`{name}`](fn@{name}): `{name}::KERNEL` (the kernel as written){}. Launch them with `clustered_host` on a GPU or its CPU backend; the arguments are `<{name} as KernelFn>::Args`, one per parameter.",
        if schedules.is_empty() {
            String::new()
        } else {
            format!(
                " and its schedules {}",
                schedules
                    .iter()
                    .map(|(s, _)| format!("`{name}::{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let host = quote!(#[cfg(not(target_arch = "nvptx64"))]);
    let bounds = crate::bounds::handle_const(bounds);
    let accesses_tokens = crate::access::to_tokens(accesses, &quote!(#device::abi));
    // The handle type exists on the GPU too: a pool task's items
    // (`crate::task`) are implemented on it.
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types)]
        #vis struct #kernel {}

        #host
        impl #entry::KernelFn for #kernel {
            const NAME: &'static str = #name;
            #bounds
            type Args<#lifetime, #backend: #entry::Backend> = (#(#arg_types,)*);
            type Raw = (#(#raw_types,)*);
            fn visit<#lifetime, #backend: #entry::Backend, V: #entry::Visitor<#lifetime, #backend>>(
                #args: Self::Args<#lifetime, #backend>,
                #visitor: &mut V,
            ) {
                let (#(#bindings,)*) = #args;
                let _ = &#visitor;
                #(#visits)*
            }
            fn raw(
                #args: Self::Args<'_, #device::cpu::Host>,
                #buffers: &mut #device::cpu::Buffers,
            ) -> Self::Raw {
                let (#(#bindings,)*) = #args;
                let _ = &#buffers;
                (#(#raws,)*)
            }
        }

        #host
        #[allow(non_upper_case_globals)]
        impl #kernel {
            /// The kernel as written (the baseline of its schedules).
            pub const KERNEL: #entry::Entry<Self> = {
                let cpu = #baseline;
                // SAFETY: the entry and its function, as emitted together.
                unsafe { #entry::Entry::__new(#name, ::core::option::Option::None, cpu) }
            };
            #(#schedule_consts)*
            /// What the access analysis read in the kernel's body: each
            /// global load and store with its affine form
            /// (`clustered::access`).
            pub const ACCESSES: #device::abi::access::Accesses<'static> = #accesses_tokens;
            /// The automatic family: the baseline, the schedules that
            /// `#[clustered(auto)]` proposed, then those written beside it
            /// (just the baseline without it).
            pub const AUTO: &'static [#entry::Entry<Self>] = &[Self::KERNEL #(, Self::#auto)*];
            /// Every schedule of the kernel, in the order of its attributes.
            pub const SCHEDULES: &'static [#entry::Entry<Self>] = &[#(#listed),*];

            /// The schedule called `name`, or an error listing the names.
            pub fn schedule(name: &str) -> ::core::result::Result<#entry::Entry<Self>, #entry::UnknownSchedule> {
                #entry::find(Self::SCHEDULES, name)
            }
        }
    }
}

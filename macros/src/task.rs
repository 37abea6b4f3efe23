//! Pool tasks from ordinary kernels (issue 15): what `#[kernel]` and
//! `#[clustered]` add to a kernel whose parameters fit a task's payload, and
//! `task_pool!`, which writes a pool kernel serving a list of them.
//!
//! For `fn saxpy(x: *const f32, y: *mut f32, a: f32, n: u32)`:
//!
//! ```text
//! #[repr(C)] pub struct saxpy_args { pub x: u64, pub y: u64, pub a: f32, pub n: u32 }
//! unsafe impl Payload for saxpy_args {}
//! impl TaskArgs for saxpy_args { type Kernel = saxpy; }
//! impl saxpy { pub unsafe fn run_task(args: saxpy_args, cta: Cta) { /* the body, reading cta */ } }
//! unsafe impl TaskKernel for saxpy { type Args = saxpy_args; .. }
//! ```
//!
//! `task_pool!(pub unsafe fn my_pool = [saxpy, sgemm64]);` is a `#[kernel]`
//! `my_pool(slots: *mut Slot)` whose body is one `serve` matching the kind
//! (the index in the list) to `<kernel as TaskKernel>::run_task`, plus
//! `Serves<kernel> for my_pool` (the kind) and `my_pool::task(ctas, args)`,
//! `my_pool::KINDS` and `my_pool::TASKS`.
//!
//! Every generated name is here: [`args_name`], [`RUN_TASK`] and the pool's
//! [`POOL_ITEMS`] (the registry refuses them as schedule names).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Error, FnArg, Ident, ItemFn, Pat, Type};

use crate::clustered::{analyse, expand};

/// The task function on a kernel's handle: `<kernel>::run_task`.
pub const RUN_TASK: &str = "run_task";
/// The items `task_pool!` adds to the pool kernel's handle.
pub const POOL_ITEMS: &[&str] = &["KINDS", "TASKS", "task"];

/// The payload struct of `kernel`'s tasks: `<kernel>_args`, spanned at the
/// kernel's name (a user item of the same name is reported there).
pub fn args_name(kernel: &Ident) -> Ident {
    format_ident!("{}_args", kernel, span = kernel.span())
}

/// Bytes and alignment of a parameter in the payload, if it may be one:
/// raw pointers to sized data (as `u64`) and fixed-size numbers, whose
/// layout is the same on the host and on `nvptx64` and for which any bits
/// are valid (`bool`, `usize` and user types are not).
fn field_layout(ty: &Type) -> Option<usize> {
    match ty {
        Type::Paren(inner) => field_layout(&inner.elem),
        Type::Group(inner) => field_layout(&inner.elem),
        Type::Ptr(ptr) => match &*ptr.elem {
            Type::Slice(_) | Type::TraitObject(_) => None,
            Type::Path(path) if path.path.is_ident("str") => None,
            _ => Some(8),
        },
        Type::Path(path) => {
            let ident = path.path.get_ident()?.to_string();
            match ident.as_str() {
                "u8" | "i8" => Some(1),
                "u16" | "i16" => Some(2),
                "u32" | "i32" | "f32" => Some(4),
                "u64" | "i64" | "f64" => Some(8),
                _ => None,
            }
        }
        _ => None,
    }
}

fn is_pointer(ty: &Type) -> bool {
    match ty {
        Type::Paren(inner) => is_pointer(&inner.elem),
        Type::Group(inner) => is_pointer(&inner.elem),
        Type::Ptr(_) => true,
        _ => false,
    }
}

/// The `#[repr(C)]` size of fields of these sizes (each aligned to its size).
fn repr_c_size(sizes: &[usize]) -> usize {
    let mut offset = 0usize;
    for &size in sizes {
        offset = offset.next_multiple_of(size) + size;
    }
    let align = sizes.iter().copied().max().unwrap_or(1);
    offset.next_multiple_of(align)
}

/// The payload struct and task function of `function`, or nothing when its
/// parameters cannot travel in a payload (a pattern, a type other than a
/// pointer or a number, more than `PAYLOAD_BYTES` in all) or its body cannot
/// be a task (grid-wide synchronisation, a vote in a body that returns
/// early): such a kernel is simply no task, and `task_pool!` says so where
/// it is listed (`TaskKernel`'s message).
pub fn task_support(function: &ItemFn) -> TokenStream {
    let mut names = Vec::new();
    let mut types = Vec::new();
    let mut mutability = Vec::new();
    let mut sizes = Vec::new();
    for input in &function.sig.inputs {
        let FnArg::Typed(typed) = input else {
            return TokenStream::new();
        };
        let Pat::Ident(ident) = &*typed.pat else {
            return TokenStream::new();
        };
        if ident.by_ref.is_some() || ident.subpat.is_some() {
            return TokenStream::new();
        }
        let Some(size) = field_layout(&typed.ty) else {
            return TokenStream::new();
        };
        names.push(ident.ident.clone());
        types.push((*typed.ty).clone());
        mutability.push(ident.mutability);
        sizes.push(size);
    }
    if repr_c_size(&sizes) > clustered_abi::pool::PAYLOAD_BYTES {
        return TokenStream::new();
    }

    // The body as a schedule's task sees it: block-index reads from `cta`.
    // A pool runs a block's CTAs one after the other, like a persistent
    // schedule, so a body that returns early gets the task protocol: its
    // barriers wait for the threads that returned, and each `return` (and
    // the end) ends the task for the whole CTA (`run::pool_end_task`),
    // counting the task's threads only.
    let kernel = &function.sig.ident;
    let cta = expand::cta();
    let returns_early = analyse::returns_early(&function.block);
    let mut errors = Vec::new();
    let suffix = format_ident!("{}_{}", kernel, RUN_TASK);
    let (body, facts) = analyse::task_body(
        function,
        &cta,
        &suffix,
        returns_early,
        true,
        &[],
        &mut errors,
    );
    let device = crate::runtime::runtime_path();
    let end_task = (facts.shares_within_cta && returns_early).then(|| {
        let end = analyse::end_task_call(Some(&cta));
        quote!(#end;)
    });
    if !errors.is_empty() {
        return TokenStream::new();
    }

    let vis = &function.vis;
    let args_type = args_name(kernel);
    let run_task = Ident::new(RUN_TASK, Span::call_site());
    let args = Ident::new("__args", Span::mixed_site());
    let fields = names.iter().zip(&types).map(|(name, ty)| {
        let field_ty = if is_pointer(ty) {
            quote!(u64)
        } else {
            quote!(#ty)
        };
        let doc = if is_pointer(ty) {
            format!(
                " `{name}: {}`, as a device address.",
                quote!(#ty).to_string().replace("* ", "*")
            )
        } else {
            format!(" `{name}: {}`.", quote!(#ty))
        };
        quote!(#[doc = #doc] pub #name: #field_ty)
    });
    let bindings = names
        .iter()
        .zip(&types)
        .zip(&mutability)
        .map(|((name, ty), mutability)| {
            if is_pointer(ty) {
                quote!(let #mutability #name: #ty = #args.#name as #ty;)
            } else {
                quote!(let #mutability #name: #ty = #args.#name;)
            }
        });
    let name = kernel.to_string();
    let struct_doc = format!(
        " The parameters of [`{name}`](fn@{name}) as a pool task's payload (pointers as `u64` device addresses): push them with a `task_pool!` pool's `task(ctas, {name}_args {{ .. }})`."
    );
    let run_doc = format!(
        " Runs the body of [`{name}`](fn@{name}) for CTA `cta` of a pool task: its block-index reads answer from `cta`, a `return` ends this CTA only."
    );
    let overflow = format!("the parameters of `{name}` do not fit in a task's payload");
    quote! {
        #[doc = #struct_doc]
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        #[allow(non_camel_case_types)]
        #vis struct #args_type {
            #(#fields,)*
        }

        // SAFETY: `#[repr(C)]` fixed-size numbers only, the same layout on
        // the host and the GPU; any bits are valid.
        unsafe impl #device::pool::Payload for #args_type {}

        impl #device::pool::TaskArgs for #args_type {
            type Kernel = #kernel;
        }

        const _: () = ::core::assert!(
            ::core::mem::size_of::<#args_type>() <= #device::pool::PAYLOAD_BYTES,
            #overflow
        );

        impl #kernel {
            #[doc = #run_doc]
            ///
            /// # Safety
            /// As for launching the kernel with these arguments; every thread
            /// of the block calls it.
            #[inline(always)]
            #[allow(non_snake_case, unreachable_code)]
            pub unsafe fn #run_task(#args: #args_type, #cta: #device::cta::Cta) {
                #(#bindings)*
                #body
                #end_task
            }
        }

        // SAFETY: `Args` is the kernel's parameters, `run_task` its body.
        unsafe impl #device::pool::TaskKernel for #kernel {
            type Args = #args_type;
            #[inline(always)]
            unsafe fn run_task(#args: #args_type, #cta: #device::cta::Cta) {
                // SAFETY: the caller's promise.
                unsafe { #kernel::#run_task(#args, #cta) }
            }
        }
    }
}

/// `task_pool!`'s input: `#[attrs] vis unsafe fn name = [kernel, ..];`.
struct PoolInput {
    attrs: Vec<syn::Attribute>,
    vis: syn::Visibility,
    unsafety: Option<syn::Token![unsafe]>,
    fn_token: syn::Token![fn],
    name: Ident,
    kernels: Punctuated<syn::Path, syn::Token![,]>,
    bracket: Span,
}

impl Parse for PoolInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let vis = input.parse()?;
        let unsafety = input.parse()?;
        let fn_token = input.parse()?;
        let name = input.parse()?;
        input.parse::<syn::Token![=]>()?;
        let content;
        let bracket = syn::bracketed!(content in input);
        let kernels = content.parse_terminated(syn::Path::parse_mod_style, syn::Token![,])?;
        if input.peek(syn::Token![;]) {
            input.parse::<syn::Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("expected the end of `task_pool!`: one pool per call"));
        }
        Ok(PoolInput {
            attrs,
            vis,
            unsafety,
            fn_token,
            name,
            kernels,
            bracket: bracket.span.join(),
        })
    }
}

/// `task_pool!(..)`: the pool kernel, its kinds and its typed tasks.
pub fn expand_pool(input: TokenStream) -> TokenStream {
    let example = "task_pool!(pub unsafe fn my_pool = [kernel_a, kernel_b]);";
    let pool: PoolInput = match syn::parse2(input) {
        Ok(pool) => pool,
        Err(e) => {
            let message = format!("{e}; write `{example}`");
            return Error::new(e.span(), message).to_compile_error();
        }
    };
    let mut errors = Vec::new();
    if pool.unsafety.is_none() {
        errors.push(Error::new(
            pool.fn_token.span(),
            format!(
                "a pool is a kernel, which trusts the pointers the host pushes: write `unsafe fn {}`",
                pool.name
            ),
        ));
    }
    if pool.kernels.is_empty() {
        errors.push(Error::new(
            pool.bracket,
            "the pool serves no kernel: list the kernels it runs, e.g. `[saxpy, sgemm64]`",
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for path in &pool.kernels {
        let text = quote!(#path).to_string();
        if seen.contains(&text) {
            errors.push(Error::new_spanned(
                path,
                format!("`{text}` is listed twice: each kernel is one kind; remove this one"),
            ));
        }
        seen.push(text);
    }
    if let Some(error) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        return error.to_compile_error();
    }

    let device = crate::runtime::runtime_path();
    let PoolInput {
        attrs,
        vis,
        name,
        kernels,
        ..
    } = &pool;
    let kinds = kernels.len() as u32;
    let (task, cta) = (
        Ident::new("__task", Span::mixed_site()),
        Ident::new("__cta", Span::mixed_site()),
    );
    // One hidden alias per kind, the only place that names the listed
    // path: a kernel that does not exist is reported once, where listed.
    let aliases: Vec<Ident> = kernels
        .iter()
        .enumerate()
        .map(|(kind, path)| format_ident!("__{}_kind_{}", name, kind, span = path.span()))
        .collect();
    let alias_items = kernels.iter().zip(&aliases).map(|(path, alias)| {
        quote! {
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            type #alias = #path;
        }
    });
    // Through `Serves`, whose impl below is the one place that requires
    // `TaskKernel`: a kernel that cannot be a task is reported once.
    let arms = aliases.iter().enumerate().map(|(kind, alias)| {
        let kind = kind as u32;
        quote_spanned! {alias.span()=>
            #kind => <#name as #device::pool::Serves<#alias>>::__run(#task, #cta),
        }
    });
    let listed = kernels
        .iter()
        .map(|path| quote!(#path).to_string().replace(' ', ""))
        .collect::<Vec<_>>();
    let doc = format!(
        " A task pool (`task_pool!`): each resident block but the last serves its ring of `RING_ENTRIES` slots of `slots`, the last publishes finished tasks; kind `k` runs the `k`-th of {}.",
        listed
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let safety = quote! {
        ///
        /// # Safety
        /// `slots` holds one ring of `RING_ENTRIES` slots per block of the
        /// grid but the last, and the pool's header after them, served by a
        /// `TaskPool`; each task's arguments are valid for its kernel.
    };
    let function: TokenStream = quote! {
        #(#attrs)*
        #[doc = #doc]
        #safety
        #vis unsafe fn #name(slots: *mut #device::pool::Slot) {
            // SAFETY: the kernel's own conditions.
            unsafe {
                #device::pool::serve(slots, #kinds, |#task: &#device::pool::Task, #cta: #device::cta::Cta| {
                    match #task.kind() {
                        #(#arms)*
                        _ => {}
                    }
                    0
                })
            }
        }
    };
    let kernel = crate::kernel::expand_kernel(TokenStream::new(), function, false);
    let serves = aliases.iter().enumerate().map(|(kind, alias)| {
        let kind = kind as u32;
        quote_spanned! {alias.span()=>
            impl #device::pool::Serves<#alias> for #name {
                const KIND: u32 = #kind;
            }
        }
    });
    let host = quote!(#[cfg(not(target_arch = "nvptx64"))]);
    quote! {
        #(#alias_items)*
        #kernel
        #(#serves)*
        #host
        impl #name {
            /// Kinds the pool serves, `0..KINDS` (`PoolConfig::new(KINDS)`).
            pub const KINDS: u32 = #kinds;
            /// The kernels it serves, by kind.
            pub const TASKS: &'static [&'static str] = &[#(#listed),*];
            /// A task of the kernel whose arguments `args` are (its kind is
            /// its place in the pool's list), over `ctas` CTAs.
            pub fn task<A: #device::pool::TaskArgs>(ctas: u32, args: A) -> #device::pool::Task
            where
                Self: #device::pool::Serves<A::Kernel>,
            {
                <Self as #device::pool::Serves<A::Kernel>>::task(ctas, args)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_sizes_follow_repr_c() {
        assert_eq!(repr_c_size(&[]), 0);
        assert_eq!(repr_c_size(&[8, 8, 4, 4]), 24);
        assert_eq!(repr_c_size(&[4, 8]), 16);
        assert_eq!(repr_c_size(&[8, 4]), 16);
        assert_eq!(repr_c_size(&[1, 2, 1]), 6);
    }

    #[test]
    fn only_pointers_and_numbers_travel() {
        let ok: [Type; 4] = [
            syn::parse_quote!(*const f32),
            syn::parse_quote!(*mut [u32; 4]),
            syn::parse_quote!(u16),
            syn::parse_quote!(f64),
        ];
        assert!(ok.iter().all(|t| field_layout(t).is_some()));
        let refused: [Type; 5] = [
            syn::parse_quote!(bool),
            syn::parse_quote!(usize),
            syn::parse_quote!(Params),
            syn::parse_quote!([u32; 2]),
            syn::parse_quote!(*const [f32]),
        ];
        assert!(refused.iter().all(|t| field_layout(t).is_none()));
    }
}

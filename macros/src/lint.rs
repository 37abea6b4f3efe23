//! Warnings about kernels that compile slower than they read.
//!
//! Stable Rust gives proc macros no warnings of their own, so each is the
//! use of a `#[deprecated]` unit struct whose note is the message, spanned
//! at the code it is about (what the `proc-macro-warning` crate does). A
//! kernel silences them with `#[allow(deprecated)]`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{BinOp, Expr, ItemFn, Type};

/// What [`wrapping_index`] says.
const WRAPPING_INDEX: &str = "u32 index arithmetic in a loop: it may wrap, so the address \
is rebuilt every iteration instead of stepped (CUDA C++ `int` indices may not overflow). Index with \
`clustered::index::at(row, width, col)` (promises no wrap; the CPU backend checks it), step a \
pointer (`p = p.add(n as usize)`), or compute in usize; which is fastest depends on the loop \
(docs/BENCHMARKS.md, 'Index arithmetic'). `#[allow(deprecated)]` on the kernel silences this";

/// Warnings for `ptr.add((a * b + c) as usize)` in a loop: an index built in
/// `u32` (or any narrower type) and widened after the arithmetic.
pub fn wrapping_index(function: &ItemFn) -> TokenStream {
    if allows_deprecated(function) {
        return TokenStream::new();
    }
    let mut finder = WrappingIndex::default();
    finder.visit_block(&function.block);
    finder
        .sites
        .into_iter()
        .map(|span| warning(span, WRAPPING_INDEX))
        .collect()
}

/// Warnings for code the access analysis does not read (`access::Unseen`)
/// in a kernel whose schedules or prefetch hook come from that analysis
/// (`#[clustered(auto)]`, `prefetch = auto`): the accesses inside count
/// for nothing there.
pub fn unseen_accesses(function: &ItemFn, analysis: &crate::access::Analysis) -> TokenStream {
    if allows_deprecated(function) {
        return TokenStream::new();
    }
    analysis
        .unseen
        .iter()
        .map(|u| {
            let pointers: Vec<String> = u.pointers.iter().map(|p| format!("`{p}`")).collect();
            let message = format!(
                "the access analysis does not read into {} (it names {}): what it loads and \
stores counts for nothing in `#[clustered(auto)]`'s proposals and `prefetch = auto`'s hook. Write \
those accesses in the kernel's body, or silence this with `#[allow(deprecated)]` on the kernel",
                u.what,
                pointers.join(", ")
            );
            warning(u.span, &message)
        })
        .collect()
}

/// Warnings for a constant table read at an index that differs between
/// the threads of a warp: the constant cache serves one address at a time.
pub fn divergent_constant_reads(
    function: &ItemFn,
    analysis: &crate::access::Analysis,
) -> TokenStream {
    if allows_deprecated(function) {
        return TokenStream::new();
    }
    analysis
        .divergent_constant_reads
        .iter()
        .map(|(table, span)| {
            let message = format!(
                "`{table}` is read at an index that depends on the thread's index, so the \
threads of a warp read different elements: the constant cache serves a warp one address at a \
time, as many turns as there are different indices. Keep a table that each thread indexes on its \
own in global memory (a pointer parameter); a `constant_table!` is for indices that are the same \
across the warp. `#[allow(deprecated)]` on the kernel silences this"
            );
            warning(*span, &message)
        })
        .collect()
}

/// `#[allow(deprecated)]` on the kernel: the warnings sit beside the
/// function, outside the lint scope the attribute opens, so it is read here.
fn allows_deprecated(function: &ItemFn) -> bool {
    function.attrs.iter().any(|attr| {
        attr.path().is_ident("allow")
            && attr
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|lints| lints.iter().any(|lint| lint.is_ident("deprecated")))
    })
}

/// The warning `message` at `span`.
fn warning(span: Span, message: &str) -> TokenStream {
    let used = quote_spanned!(span=> clustered_performance_warning);
    quote! {
        const _: () = {
            #[deprecated(note = #message)]
            #[allow(non_camel_case_types)]
            struct clustered_performance_warning;
            let _ = #used;
        };
    }
}

#[derive(Default)]
struct WrappingIndex {
    /// Loops around the expression being visited.
    loops: usize,
    sites: Vec<Span>,
}

impl WrappingIndex {
    fn in_loop(&mut self, visit_body: impl FnOnce(&mut Self)) {
        self.loops += 1;
        visit_body(self);
        self.loops -= 1;
    }
}

/// `(a * b + c) as usize`: arithmetic first, widened after.
fn widened_after_arithmetic(expr: &Expr) -> bool {
    let Expr::Cast(cast) = strip(expr) else {
        return false;
    };
    let Type::Path(to) = &*cast.ty else {
        return false;
    };
    if !to.path.is_ident("usize") {
        return false;
    }
    matches!(
        strip(&cast.expr),
        Expr::Binary(binary) if matches!(binary.op, BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_))
    )
}

fn strip(mut expr: &Expr) -> &Expr {
    loop {
        match expr {
            Expr::Paren(inner) => expr = &inner.expr,
            Expr::Group(inner) => expr = &inner.expr,
            _ => return expr,
        }
    }
}

impl<'ast> Visit<'ast> for WrappingIndex {
    fn visit_expr_for_loop(&mut self, node: &'ast syn::ExprForLoop) {
        self.visit_expr(&node.expr);
        self.in_loop(|this| this.visit_block(&node.body));
    }

    fn visit_expr_while(&mut self, node: &'ast syn::ExprWhile) {
        self.in_loop(|this| {
            this.visit_expr(&node.cond);
            this.visit_block(&node.body);
        });
    }

    fn visit_expr_loop(&mut self, node: &'ast syn::ExprLoop) {
        self.in_loop(|this| this.visit_block(&node.body));
    }

    fn visit_expr_method_call(&mut self, node: &'ast syn::ExprMethodCall) {
        let offsets = ["add", "sub", "offset"];
        if self.loops > 0
            && offsets.iter().any(|m| node.method == m)
            && node.args.len() == 1
            && widened_after_arithmetic(&node.args[0])
        {
            self.sites.push(node.args[0].span());
        }
        visit::visit_expr_method_call(self, node);
    }

    // A closure or nested function is another scope; its loops count there.
    fn visit_item_fn(&mut self, node: &'ast ItemFn) {
        let outer = std::mem::take(&mut self.loops);
        visit::visit_item_fn(self, node);
        self.loops = outer;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clustered_abi::access::Direction;

    fn sites(body: &str) -> usize {
        let function: ItemFn = syn::parse_str(&format!("unsafe fn k() {{ {body} }}")).unwrap();
        let mut finder = WrappingIndex::default();
        finder.visit_block(&function.block);
        finder.sites.len()
    }

    #[test]
    fn u32_arithmetic_widened_in_a_loop_is_reported() {
        assert_eq!(
            sites("for k in 0..n { s += *a.add((row * n + k) as usize); }"),
            1
        );
        assert_eq!(
            sites("while k < n { s += *b.add((k * n + col) as usize); k += 1; }"),
            1
        );
        assert_eq!(sites("loop { x = *p.offset(((i - 1)) as usize); }"), 1);
        // Two in one loop, one nested deeper.
        assert_eq!(
            sites("for i in 0..n { for j in 0..n { *c.add((i * n + j) as usize) = *a.add((j * n + i) as usize); } }"),
            2
        );
    }

    #[test]
    fn code_the_analysis_does_not_read_is_warned_about_unless_allowed() {
        let source = "unsafe fn k(a: *const f32, c: *mut f32) {
            let get = |i: u32| *a.add(i as usize);
            let twice = |v: f32| v * 2.0;
            *c = twice(get(0));
        }";
        let loud: ItemFn = syn::parse_str(source).unwrap();
        let quiet: ItemFn = syn::parse_str(&format!("#[allow(deprecated)] {source}")).unwrap();
        let warnings = unseen_accesses(&loud, &crate::access::analyse(&loud)).to_string();
        // One warning (`twice` names no pointer), naming the pointer.
        assert_eq!(
            warnings.matches("does not read into").count(),
            1,
            "{warnings}"
        );
        assert!(warnings.contains("a closure (it names `a`)"), "{warnings}");
        assert!(unseen_accesses(&quiet, &crate::access::analyse(&quiet)).is_empty());
    }

    #[test]
    fn a_pointer_handed_to_a_function_the_analysis_does_not_read_is_warned_about() {
        // The staging in a helper: its loads and stores are missing from
        // the analysis, so `auto` would propose from the rest alone.
        let source = "unsafe fn k(a: *const f32, c: *mut f32, n: u32) {
            let i = block_idx_x() * 32 + thread_idx_x();
            stage(a.add(i as usize), n);
            let row = c.add(i as usize);
            row.copy_from(a, 4);
            *c.add(i as usize) = fma(*a.add(i as usize), 2.0, 1.0);
            let _ = row.is_null();
            fetch_add_f32(c.add(i as usize), load_read_only(a.add(i as usize)));
            prefetch_l2(a.add(i as usize + 32));
        }";
        let function: ItemFn = syn::parse_str(source).unwrap();
        let analysis = crate::access::analyse(&function);
        let warnings = unseen_accesses(&function, &analysis).to_string();
        // Two: the helper handed `a`, the method on `c` handed `a`; not
        // `fma`, whose arguments are values the analysis read itself, nor
        // `is_null`, which touches no memory, nor the runtime's atomic,
        // load and prefetch, which it reads (an update, a load, nothing).
        let atomic: Vec<_> = analysis
            .accesses
            .iter()
            .filter(|a| a.source.contains("fetch_add_f32") || a.source.contains("load_read_only"))
            .map(|a| (a.pointer.as_str(), a.direction))
            .collect();
        assert_eq!(
            atomic,
            [("a", Direction::Load), ("c", Direction::Update)],
            "{atomic:?}"
        );
        assert_eq!(
            warnings.matches("does not read into").count(),
            2,
            "{warnings}"
        );
        assert!(
            warnings.contains("a call to `stage` (it names `a`)"),
            "{warnings}"
        );
        assert!(
            warnings.contains("a call of `.copy_from()` (it names `c`, `a`)"),
            "{warnings}"
        );
    }

    #[test]
    fn a_constant_table_read_at_each_thread_s_own_index_is_warned_about() {
        let source = "unsafe fn k(x: *const f32, y: *mut f32, n: u32, degree: u32) {
            let i = index_1d();
            let t = thread_idx_x();
            let lane = TAPS.read(t % 32);
            let mut sum = OFFSETS.read(i);
            for k in 0..degree {
                sum += COEFFICIENTS.read(k) + tables::SCALE.read(2 * k + 1);
            }
            let tile_value = tile.read(t);
            *y.add(i as usize) = sum + lane + tile_value + TAPS.read(blockIdx_free(n));
        }";
        let loud: ItemFn = syn::parse_str(source).unwrap();
        let analysis = crate::access::analyse(&loud);
        let tables: Vec<&str> = analysis
            .divergent_constant_reads
            .iter()
            .map(|(table, _)| table.as_str())
            .collect();
        // `t % 32` is not affine but still the lane's (what `t` is made
        // of); `i` is `bx*bdx + tx`; the loop's indices are uniform, a
        // shared tile is not a table, and `blockIdx_free(n)` reads no
        // thread index.
        assert_eq!(tables, ["TAPS", "OFFSETS"]);
        let warnings = divergent_constant_reads(&loud, &analysis).to_string();
        assert!(
            warnings.contains("`OFFSETS` is read at an index that depends on the thread's index"),
            "{warnings}"
        );
        let quiet: ItemFn = syn::parse_str(&format!("#[allow(deprecated)] {source}")).unwrap();
        assert!(divergent_constant_reads(&quiet, &crate::access::analyse(&quiet)).is_empty());
        let direct: ItemFn =
            syn::parse_str("unsafe fn k() { let v = TAPS.read(thread_idx_x() + 1); }").unwrap();
        assert_eq!(
            crate::access::analyse(&direct)
                .divergent_constant_reads
                .len(),
            1
        );
        // A warp's lanes share `i / 32` and `i >> 5` (one record a warp).
        let per_warp: ItemFn = syn::parse_str(
            "unsafe fn k() { let i = index_1d(); let v = TAPS.read(i / 32 % 16) + TAPS.read(i >> 5); }",
        )
        .unwrap();
        assert!(crate::access::analyse(&per_warp)
            .divergent_constant_reads
            .is_empty());
        // A loaded index: what the lanes load is unknown, so no claim.
        let loaded: ItemFn = syn::parse_str(
            "unsafe fn k(ix: *const u32) { let v = TAPS.read(*ix.add(index_1d() as usize)); }",
        )
        .unwrap();
        assert!(crate::access::analyse(&loaded)
            .divergent_constant_reads
            .is_empty());
    }

    #[test]
    fn allow_deprecated_on_the_kernel_silences_it() {
        let loud: ItemFn =
            syn::parse_str("unsafe fn k() { for k in 0..n { *a.add((k * n) as usize); } }")
                .unwrap();
        let quiet: ItemFn = syn::parse_str(
            "#[allow(unused, deprecated)] unsafe fn k() { for k in 0..n { *a.add((k * n) as usize); } }",
        )
        .unwrap();
        assert!(!wrapping_index(&loud).is_empty());
        assert!(wrapping_index(&quiet).is_empty());
    }

    #[test]
    fn widened_operands_and_code_outside_loops_are_not() {
        // Outside any loop: once per thread, nothing to step.
        assert_eq!(sites("*c.add((row * n + col) as usize) = s;"), 0);
        // Widened first: what the warning asks for.
        assert_eq!(
            sites("for k in 0..n { s += *a.add(row as usize * n as usize + k as usize); }"),
            0
        );
        // A bare loop variable: LLVM widens it itself.
        assert_eq!(sites("for k in 0..n { s += *x.add(k as usize); }"), 0);
        // Not an offset.
        assert_eq!(sites("for k in 0..n { v.push((k * 2) as usize); }"), 0);
    }
}

//! What the body does with the block index, shared memory and barriers; and
//! the checks that tie a schedule to its function (`bypass` included; its
//! loads are rewritten with the other global accesses, in `crate::trace`).

use syn::visit_mut::{self, VisitMut};
use syn::{Error, Expr, ExprCall, ExprMacro, ExprPath, FnArg, Ident, ItemFn, Pat, Type};

use clustered_abi::{OptionError, Options, ScheduleOption};

use super::parse::Schedule;

/// Built-ins that read the hardware's block index or grid size. In a
/// schedule's body, `name()` becomes `cta.virtual_<name>(name)`, which
/// answers from the task's CTA when the callee is the runtime's getter and
/// calls it as written otherwise (`device/src/cta.rs`), so a user's own
/// function of the same name keeps its meaning.
const CTA_READS: &[&str] = &[
    "block_idx_x",
    "block_idx_y",
    "block_idx_z",
    "grid_dim_x",
    "grid_dim_y",
    "grid_dim_z",
    "index_1d",
    "index_2d",
];

/// The block's size, which a pool task reads from its CTA: a worker block
/// with a publishing warp has more threads than the task's
/// (`clustered_abi::pool`, "A publishing warp").
const POOL_CTA_SIZES: &[&str] = &["block_dim_x", "block_dim_y", "block_dim_z"];

/// `core::arch::nvptx`'s readers (`unsafe fn() -> i32`), answered by the
/// `Cta` method of the same name without the underscore.
const NVPTX_CTA_READS: &[&str] = &[
    "_block_idx_x",
    "_block_idx_y",
    "_block_idx_z",
    "_grid_dim_x",
    "_grid_dim_y",
    "_grid_dim_z",
];

/// Calls that make the CTA's threads wait for each other or share memory:
/// consecutive tasks of an agent then need a barrier between them.
const CTA_SHARING: &[&str] = &[
    "sync_threads",
    "sync_threads_and",
    "_syncthreads",
    "dynamic_shared_memory",
    "shared_array",
];

/// Grid-wide synchronisation cannot work once CTAs are run by agents.
fn is_grid_sync(name: &str) -> bool {
    matches!(
        name,
        "sync_grid" | "grid_sync" | "grid_sync_threads" | "this_grid"
    )
}

/// The kernel's parameters: names and types, in order.
pub struct Parameters {
    pub names: Vec<Ident>,
    pub types: Vec<Type>,
    /// `mut` where the body declared it: kept on the task function, whose
    /// body is the kernel's; the entry point only forwards the values.
    pub mutability: Vec<Option<syn::Token![mut]>>,
}

pub fn parameters(function: &ItemFn, errors: &mut Vec<Error>) -> Parameters {
    let mut names = Vec::new();
    let mut types = Vec::new();
    let mut mutability = Vec::new();
    for input in &function.sig.inputs {
        if let FnArg::Typed(typed) = input {
            match &*typed.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    names.push(ident.ident.clone());
                    types.push((*typed.ty).clone());
                    mutability.push(ident.mutability);
                }
                other => errors.push(Error::new_spanned(
                    other,
                    "a clustered kernel's parameters are plain names (`n: u32`): the scheduler passes them on to every task",
                )),
            }
        }
    }
    Parameters {
        names,
        types,
        mutability,
    }
}

/// Checks options against each other and against the function.
pub fn check_schedule(schedule: &Schedule, parameters: &Parameters, errors: &mut Vec<Error>) {
    // Which options go together is decided in `clustered-abi`, which the
    // host also applies to every contract; the messages and spans are ours.
    let options = Options {
        binding: schedule.binding,
        active: schedule.active.map(|(n, _)| n),
        chunk: schedule.chunk.map(|(n, _)| n),
        prefetch: schedule.prefetch.is_some(),
        prefetch_distance: schedule.prefetch_distance.map(|(n, _)| n),
        waves: schedule.waves.map(|(n, _)| n),
        tail: schedule.tail.map(|(tail, _)| tail),
    };
    let binding = schedule.binding.name();
    for violation in options.violations() {
        let at = |message: String| match violation.option() {
            ScheduleOption::Prefetch => Error::new(
                schedule
                    .prefetch
                    .as_ref()
                    .map_or(schedule.span, |p| p.span()),
                message,
            ),
            option => {
                let span = match option {
                    ScheduleOption::Active => schedule.active,
                    ScheduleOption::Chunk => schedule.chunk,
                    ScheduleOption::Waves => schedule.waves,
                    ScheduleOption::Tail => schedule.tail.map(|(tail, span)| (tail as u32, span)),
                    _ => schedule.prefetch_distance,
                };
                Error::new(span.map_or(schedule.span, |(_, span)| span), message)
            }
        };
        let message = match violation {
            OptionError::WrongBinding { option: ScheduleOption::Active, .. } => format!("`active` throttles agents, but this schedule uses `binding = {binding}`: remove `active` or use `binding = agents`"),
            OptionError::WrongBinding { option: ScheduleOption::Chunk, .. } => format!("`chunk` sets how many tasks an agent claims, but this schedule uses `binding = {binding}`: remove `chunk` or use `binding = agents`"),
            OptionError::WrongBinding { option: ScheduleOption::Prefetch, .. } => format!("`prefetch` needs to know the next task, which only persistent blocks do: remove it or use `binding = agents`, `persistent` or `stride` (with `binding = {binding}` each block runs one task)"),
            OptionError::PrefetchNeedsChunk => "`prefetch` is called with the next task of the same chunk: add `chunk = 2` or more".to_string(),
            OptionError::WrongBinding { option: ScheduleOption::Waves, .. } => format!("`waves` sets how many blocks a grid-stride loop launches, but this schedule uses `binding = {binding}`: remove `waves` or use `binding = stride`"),
            OptionError::WrongBinding { option: ScheduleOption::Tail, .. } => format!("`tail` says where a grid-stride loop's last rounds go, but this schedule uses `binding = {binding}`: remove `tail` or use `binding = stride`"),
            OptionError::WrongBinding { option: ScheduleOption::PrefetchDistance, .. } => format!("`prefetch_distance` sets how many tasks ahead a grid-stride loop prefetches, but this schedule uses `binding = {binding}`: remove it or use `binding = stride`"),
            OptionError::DistanceNeedsPrefetch => "`prefetch_distance` needs a hook to call: add `prefetch = path::to::hook` or remove it".to_string(),
            // The parser takes only counts of at least 1; any other rule
            // gets the runtime's own words.
            other => other.to_string(),
        };
        errors.push(at(message));
    }
    let mut seen: Vec<&Ident> = Vec::new();
    for name in &schedule.bypass {
        if seen.contains(&name) {
            errors.push(Error::new(
                name.span(),
                format!("`{name}` is listed twice in `bypass`"),
            ));
            continue;
        }
        seen.push(name);
        match parameters.names.iter().position(|p| p == name) {
            None => errors.push(Error::new(
                name.span(),
                format!("`bypass` names `{name}`, which is not a parameter of this kernel; list pointer parameters whose loads should skip L1"),
            )),
            Some(index) => match &parameters.types[index] {
                Type::Ptr(ptr) if ptr.const_token.is_some() => {}
                Type::Ptr(_) => errors.push(Error::new(
                    name.span(),
                    format!("`{name}` is `*mut`: bypass is for data the kernel only reads; make it `*const` or remove it from `bypass`"),
                )),
                _ => errors.push(Error::new(
                    name.span(),
                    format!("`{name}` is not a pointer: `bypass` lists `*const` parameters whose loads skip L1"),
                )),
            },
        }
    }
}

/// What the body does, found while rewriting it for one schedule.
#[derive(Default)]
pub struct BodyFacts {
    /// It calls a barrier or uses shared memory.
    pub shares_within_cta: bool,
    /// It `return`s (see [`returns_early`]).
    pub returns_early: bool,
}

/// The body of `function` as a task sees it (a schedule's, or a pool's
/// `run_task`): [`rewrite_body`] on a copy, the task protocol's ends at its
/// `return`s where a CTA shares memory and `task_protocol` is on, and its
/// global accesses traced (loads of `bypass` past L1).
pub fn task_body(
    function: &syn::ItemFn,
    cta: &Ident,
    kernel: &Ident,
    task_protocol: bool,
    pool: bool,
    bypass: &[Ident],
    errors: &mut Vec<Error>,
) -> (syn::Block, BodyFacts) {
    let mut body = (*function.block).clone();
    let facts = rewrite_body(&mut body, cta, kernel, task_protocol, pool, errors);
    if facts.shares_within_cta && task_protocol {
        // A schedule's task function returns the task end; a pool's
        // `run_task`, generated for every kernel whether a pool serves it
        // or not, returns `()`: typed, a `return` in a macro of a kernel
        // that no pool runs would not compile.
        let value = (!pool).then(task_end);
        end_tasks_at_returns(
            &mut body,
            &end_task_call(pool.then_some(cta)),
            value.as_ref(),
        );
    }
    errors.extend(crate::trace::trace_global_memory(
        &mut body,
        &function.sig.inputs,
        bypass,
    ));
    (body, facts)
}

/// Rewrites a copy of the body for a schedule: block-index reads go to the
/// virtual CTA `cta`.
///
/// Shared arrays are renamed with the kernel's name as suffix: every copy of
/// the body declares its own PTX symbol, which ptxas requires to be unique.
///
/// In a persistent schedule (`persistent`: agents, persistent, stride) the
/// body's `sync_threads()` becomes `run::barrier_in_body(sync_threads)`: a
/// barrier that threads whose task ended early still take part in
/// (`device/src/run.rs`, `end_task`).
///
/// In a pool task's body (`pool`) the block's size is read from `cta`
/// too, and, without the task protocol, `sync_threads()` becomes the
/// CTA's own barrier (`cta.virtual_sync_threads(sync_threads)`): both
/// count the task's threads, not a publishing warp beside them.
pub fn rewrite_body(
    body: &mut syn::Block,
    cta: &Ident,
    kernel: &Ident,
    persistent: bool,
    pool: bool,
    errors: &mut Vec<Error>,
) -> BodyFacts {
    let mut rewriter = Rewriter {
        cta,
        kernel,
        persistent,
        pool,
        facts: BodyFacts::default(),
        errors,
    };
    rewriter.visit_block_mut(body);
    rewriter.facts
}

struct Rewriter<'a> {
    cta: &'a Ident,
    kernel: &'a Ident,
    persistent: bool,
    pool: bool,
    facts: BodyFacts,
    errors: &'a mut Vec<Error>,
}

/// The body's rewrite of a call `func()` with no arguments, if it needs one.
fn rewrite_call(
    func: &Expr,
    name: &Ident,
    cta: &Ident,
    persistent: bool,
    pool: bool,
) -> Option<Expr> {
    let span = name.span();
    let text = name.to_string();
    let pool_reads = pool
        && (POOL_CTA_SIZES.contains(&text.as_str()) || (!persistent && text == "sync_threads"));
    if CTA_READS.contains(&text.as_str()) || pool_reads {
        let method = Ident::new(&format!("virtual_{text}"), span);
        return Some(syn::parse_quote_spanned!(span=> #cta.#method(#func)));
    }
    if NVPTX_CTA_READS.contains(&text.as_str()) {
        let method = Ident::new(&text[1..], span);
        return Some(syn::parse_quote_spanned!(span=> (#cta.#method() as i32)));
    }
    // A pool task's protocol counts the task's threads, not a publishing
    // warp beside them (`run::pool_body_barrier`).
    if persistent && text == "sync_threads" {
        let device = crate::runtime::runtime_path();
        return Some(if pool {
            syn::parse_quote_spanned!(span=> #device::run::pool_barrier_in_body(&#cta, #func))
        } else {
            syn::parse_quote_spanned!(span=> #device::run::barrier_in_body(#func))
        });
    }
    if persistent && text == "_syncthreads" {
        let device = crate::runtime::runtime_path();
        return Some(if pool {
            syn::parse_quote_spanned!(span=> #device::run::pool_body_barrier(&#cta))
        } else {
            syn::parse_quote_spanned!(span=> #device::run::body_barrier())
        });
    }
    None
}

/// A body's `sync_threads_and` in a persistent schedule. Threads whose task
/// returned early wait at the body's barriers with `done` set
/// (`device/src/run.rs`, `end_task`), on the same reducing barrier: a vote
/// that every live thread passes looks to them like the end of the task, so
/// they would start the next one while the others are still in this one.
fn vote_in_persistent_body(name: &Ident, kernel: &Ident) -> Error {
    Error::new(
        name.span(),
        format!(
            "`sync_threads_and` cannot be used in the body of `{kernel}`: a persistent schedule \
             (agents, persistent, stride) keeps threads whose task returned early waiting at the \
             body's barriers, and they cannot take part in a vote; write each thread's predicate to a shared array \
             and reduce it after a `sync_threads()`, or use `binding = reorder` or `redirect` for this kernel"
        ),
    )
}

fn last_segment(expr: &Expr) -> Option<&Ident> {
    match expr {
        Expr::Path(ExprPath { path, .. }) => path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

impl Rewriter<'_> {
    fn note_call(&mut self, name: &Ident) {
        let text = name.to_string();
        if CTA_SHARING.contains(&text.as_str()) {
            self.facts.shares_within_cta = true;
        }
        if is_grid_sync(&text) {
            self.errors.push(Error::new(
                name.span(),
                "grid-wide synchronisation cannot be used in a clustered kernel: its CTAs run as tasks of persistent agents, not all at once; split the kernel in two launches at this point (a function of your own by this name: rename it)",
            ));
        }
    }

    fn visit_macro(&mut self, mac: &mut syn::Macro) {
        let Some(name) = mac.path.segments.last().map(|s| s.ident.clone()) else {
            return;
        };
        self.note_call(&name);
        if name == "shared_array" {
            let mut tokens = mac.tokens.clone().into_iter();
            if let Some(proc_macro2::TokenTree::Ident(array)) = tokens.next() {
                let renamed = Ident::new(&format!("{array}_{}", self.kernel), array.span());
                mac.tokens = std::iter::once(proc_macro2::TokenTree::Ident(renamed))
                    .chain(tokens)
                    .collect();
            }
            return;
        }
        // Macros whose arguments are expressions (`assert!`, `debug_assert!`,
        // `write!`, most of the user's own): rewrite those. Others are left
        // as written; a block-index read hidden in them is caught by the
        // build's PTX check and by the CPU backend.
        let parser = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        if let Ok(mut args) = syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
            for arg in &mut args {
                self.visit_expr_mut(arg);
            }
            mac.tokens = quote::ToTokens::to_token_stream(&args);
        }
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Call(ExprCall { func, args, .. }) => {
                if let Some(name) = last_segment(func).cloned() {
                    self.note_call(&name);
                    if self.persistent && name == "sync_threads_and" {
                        self.errors
                            .push(vote_in_persistent_body(&name, self.kernel));
                    }
                    // The built-ins take no arguments; a call with some is
                    // the user's own function of the same name.
                    if args.is_empty() {
                        if let Some(rewritten) =
                            rewrite_call(func, &name, self.cta, self.persistent, self.pool)
                        {
                            *expr = rewritten;
                            return;
                        }
                    }
                }
            }
            Expr::MethodCall(call) => {
                let name = call.method.clone();
                if is_grid_sync(&name.to_string()) {
                    self.note_call(&name);
                }
            }
            Expr::Macro(ExprMacro { mac, .. }) => {
                self.visit_macro(mac);
                return;
            }
            _ => {}
        }
        visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_stmt_macro_mut(&mut self, mac: &mut syn::StmtMacro) {
        self.visit_macro(&mut mac.mac);
    }

    // Items nested in the body (helper fns, consts) are compiled on their own:
    // they are not tasks, so they are left as written.
    fn visit_item_mut(&mut self, _item: &mut syn::Item) {}
}

/// How a task ends under the task protocol: `run::end_task()` in a
/// schedule, `run::pool_end_task(&cta)` in a pool task (`pool_cta`), whose
/// barrier counts the task's threads only.
pub fn end_task_call(pool_cta: Option<&Ident>) -> Expr {
    let device = crate::runtime::runtime_path();
    match pool_cta {
        Some(cta) => syn::parse_quote!(#device::run::pool_end_task(&#cta)),
        None => syn::parse_quote!(#device::run::end_task()),
    }
}

/// What a task function that ends its tasks itself returns, as its type
/// and as its value (a unit struct's path is both):
/// `run::NoReturnInAMacro`. A `return;` the macro did not write, hidden in
/// a macro's expansion, then does not compile: "`return;` in a function
/// whose return type is not `()`", at the `return` and the macro call.
pub fn task_end() -> Expr {
    let device = crate::runtime::runtime_path();
    syn::parse_quote!(#device::run::NoReturnInAMacro)
}

/// In a persistent body that ends each task with the task barrier, makes
/// every `return` end the task the same way first: `{ end(); return value
/// }` (`end`: [`end_task_call`]; `value`: [`task_end`], or none in a pool's
/// `run_task`).
///
/// On a GPU the threads of a warp that leave a branch early wait where the
/// branch joins (ptxas's reconvergence point) until their warp-mates arrive;
/// a thread that returned would wait there while the rest of its warp waits
/// at a body barrier for it: a hang. Waiting in `end_task` inside the
/// returning branch, it arrives at those barriers instead. Closures and
/// nested items return from themselves, so they are left alone.
pub fn end_tasks_at_returns(body: &mut syn::Block, end: &Expr, value: Option<&Expr>) {
    struct Returns<'a>(&'a Expr, Option<&'a Expr>);
    impl VisitMut for Returns<'_> {
        fn visit_expr_mut(&mut self, expr: &mut Expr) {
            match expr {
                Expr::Closure(_) => return,
                Expr::Return(ret) => {
                    let span = ret.return_token.span;
                    let (end, value) = (self.0, self.1);
                    // A kernel returns `()`: what a `return` gives is
                    // evaluated, then the task ends.
                    let given = ret
                        .expr
                        .as_ref()
                        .map(|given| quote::quote!(let _: () = #given;));
                    *expr = syn::parse_quote_spanned!(span=> { #given #end; return #value });
                    return;
                }
                _ => {}
            }
            visit_mut::visit_expr_mut(self, expr);
        }
        fn visit_item_mut(&mut self, _item: &mut syn::Item) {}
    }
    Returns(end, value).visit_block_mut(body);
}

/// Does the body `return` (outside closures and nested items)? Only then do
/// a persistent schedule's barriers need the task protocol: without early
/// returns every thread reaches every barrier, and a plain barrier between
/// tasks separates them at no extra cost.
pub fn returns_early(body: &syn::Block) -> bool {
    body.stmts.iter().any(returns_in)
}

/// Whether `stmt` contains a `return` (not one of a closure or nested item).
pub fn returns_in(stmt: &syn::Stmt) -> bool {
    struct Returns(bool);
    impl syn::visit::Visit<'_> for Returns {
        fn visit_expr(&mut self, expr: &Expr) {
            match expr {
                Expr::Closure(_) => {}
                Expr::Return(_) => self.0 = true,
                _ => syn::visit::visit_expr(self, expr),
            }
        }
        fn visit_item(&mut self, _item: &syn::Item) {}
    }
    let mut returns = Returns(false);
    syn::visit::Visit::visit_stmt(&mut returns, stmt);
    returns.0
}

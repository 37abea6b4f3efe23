//! Global memory through the device runtime.
//!
//! Every `*p` read through a kernel's pointer parameters becomes
//! `memory::load(p)` and every `*p = v` becomes `memory::store(p, v)`
//! (compound assignments both). A field read through one, `(*p).f` (a
//! quad's `(*p.cast::<F32x4>()).0`), becomes `memory::load(p).f`: the
//! pointee is loaded as the plain read loads it (LLVM keeps only the
//! fields used; an `F32x4` stays one 16-byte access), and the CPU backend
//! sees the whole pointee read. An element read, `(*p)[i]`, loads from
//! `addr_of!((*p)[i])` (the element's bytes and alignment, as the plain
//! read), and a field or element written, `(*p).f = v`, stores to
//! `addr_of_mut!((*p).f)`. Borrows (`&(*p).f`) and method receivers stay
//! places, as written. On the GPU these
//! functions are exactly the access, so the PTX does not change; on the
//! CPU backend they report it to the locality simulator and check its
//! bounds.
//!
//! Which pointers count as global: the kernel's raw-pointer parameters, and
//! locals initialised from one of them (`let row = a.add(r * n);`). Other
//! dereferences (of references, of local arrays) are left as written.
//!
//! A schedule's `bypass(..)` parameters, and the locals made from them, load
//! with `memory::load_bypass_l1` instead; writing through one is an error.

use std::collections::HashMap;

use quote::quote;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{
    BinOp, Block, Error, Expr, ExprMethodCall, ExprPath, FnArg, Ident, Pat, Stmt, Type, UnOp,
};

/// Rewrites `block`, a body of the kernel with these inputs, loading through
/// the `bypass` parameters past L1; returns the writes through them.
pub fn trace_global_memory<'a>(
    block: &mut Block,
    inputs: impl IntoIterator<Item = &'a FnArg>,
    bypass: &[Ident],
) -> Vec<Error> {
    let mut pointers = HashMap::new();
    for input in inputs {
        if let FnArg::Typed(typed) = input {
            if let (Pat::Ident(name), Type::Ptr(_)) = (&*typed.pat, &*typed.ty) {
                pointers.insert(name.ident.clone(), name.ident.clone());
            }
        }
    }
    let mut tracer = Tracer {
        pointers,
        bypass,
        errors: Vec::new(),
    };
    tracer.visit_block_mut(block);
    tracer.errors
}

/// The variable a pointer expression starts from: `a`, `a.add(i)`,
/// `a.offset(i).add(j)`, `(a.add(i))`, `a.cast::<T>()`, `a as *const T`.
fn pointer_root(expr: &Expr) -> Option<&Ident> {
    match expr {
        Expr::Path(ExprPath {
            path, qself: None, ..
        }) => path.get_ident(),
        Expr::MethodCall(ExprMethodCall {
            receiver, method, ..
        }) if matches!(
            method.to_string().as_str(),
            "add"
                | "sub"
                | "offset"
                | "wrapping_add"
                | "wrapping_sub"
                | "wrapping_offset"
                | "byte_add"
                | "cast"
                | "cast_mut"
                | "cast_const"
        ) =>
        {
            pointer_root(receiver)
        }
        Expr::Paren(paren) => pointer_root(&paren.expr),
        Expr::Cast(cast) if matches!(&*cast.ty, Type::Ptr(_)) => pointer_root(&cast.expr),
        _ => None,
    }
}

struct Tracer<'a> {
    /// Global pointers in scope, each with the parameter it comes from.
    pointers: HashMap<Ident, Ident>,
    bypass: &'a [Ident],
    errors: Vec<Error>,
}

impl Tracer<'_> {
    /// The parameter a pointer expression comes from, if it is global.
    fn parameter(&self, pointer: &Expr) -> Option<&Ident> {
        pointer_root(pointer).and_then(|root| self.pointers.get(root))
    }

    /// `*p` with `p` a global pointer: the pointer expression.
    fn global_deref<'e>(&self, expr: &'e Expr) -> Option<&'e Expr> {
        match expr {
            Expr::Unary(unary) if matches!(unary.op, UnOp::Deref(_)) => {
                self.parameter(&unary.expr).map(|_| &*unary.expr)
            }
            Expr::Paren(paren) => self.global_deref(&paren.expr),
            _ => None,
        }
    }

    /// `(*p).f`, `(*p)[i]`, `(*p).f[i].g`, ... with `p` a global pointer:
    /// the pointer expression under the fields and indices.
    fn global_field<'e>(&self, expr: &'e Expr) -> Option<&'e Expr> {
        let base = match expr {
            Expr::Field(field) => &field.base,
            Expr::Index(index) => &index.expr,
            Expr::Paren(paren) => return self.global_field(&paren.expr),
            _ => return None,
        };
        self.global_deref(base).or_else(|| self.global_field(base))
    }

    /// `*p`, `(*p).f`, `(*p)[i]`, ... with `p` a global pointer: `p`.
    fn global_pointer<'e>(&self, place: &'e Expr) -> Option<&'e Expr> {
        self.global_deref(place)
            .or_else(|| self.global_field(place))
    }

    /// The address a write to the global place `place` stores to, its
    /// pointer expressions visited: the pointer itself for `*p`, else
    /// `addr_of_mut!` of the place (the field's or element's own bytes).
    fn written_address(&mut self, place: &mut Expr) -> proc_macro2::TokenStream {
        if let Some(pointer) = self.global_deref(place) {
            let mut pointer = pointer.clone();
            self.visit_expr_mut(&mut pointer);
            quote!(#pointer)
        } else {
            self.visit_place(place);
            quote!(::core::ptr::addr_of_mut!(#place))
        }
    }

    /// The runtime's load for a read through `pointer`: past L1 where it
    /// comes from a `bypass` parameter.
    fn load_function(&self, pointer: &Expr) -> proc_macro2::TokenStream {
        if self
            .parameter(pointer)
            .is_some_and(|p| self.bypass.contains(p))
        {
            quote!(load_bypass_l1)
        } else {
            quote!(load)
        }
    }

    /// A write through `place`, a global deref or a field of one: an error
    /// if its pointer comes from a bypassed parameter.
    fn check_write(&mut self, place: &Expr) {
        let Some(pointer) = self.global_pointer(place) else {
            return;
        };
        if let Some(root) = self.parameter(pointer).filter(|p| self.bypass.contains(p)) {
            self.errors.push(Error::new_spanned(
                place,
                format!("`{root}` is in `bypass` but written here: bypass is for data the kernel only reads; remove `{root}` from `bypass`"),
            ));
        }
    }

    /// `let pat = init;`: each name bound to a global pointer expression
    /// becomes a global pointer, every other name it binds shadows one
    /// (`let (a_k, b_k) = (a.add(i), b.add(j));` binds two).
    fn bind(&mut self, pat: &Pat, init: Option<&Expr>) {
        match (pat, init) {
            (Pat::Ident(name), init) if name.subpat.is_none() => {
                match init.and_then(|init| self.parameter(init)).cloned() {
                    Some(parameter) => self.pointers.insert(name.ident.clone(), parameter),
                    None => self.pointers.remove(&name.ident),
                };
            }
            (Pat::Type(typed), init) => self.bind(&typed.pat, init),
            (Pat::Paren(inner), init) => self.bind(&inner.pat, init),
            (Pat::Tuple(pats), Some(Expr::Tuple(values)))
                if pats.elems.len() == values.elems.len() =>
            {
                for (pat, value) in pats.elems.iter().zip(&values.elems) {
                    self.bind(pat, Some(value));
                }
            }
            (pat, _) => self.shadow(pat),
        }
    }

    /// Every name `pat` binds is a local from here on, not a global pointer
    /// (a `for` loop's, a closure's, a `match` arm's, an `if let`'s).
    fn shadow(&mut self, pat: &Pat) {
        struct Names<'t, 'a>(&'t mut Tracer<'a>);
        impl<'ast> syn::visit::Visit<'ast> for Names<'_, '_> {
            fn visit_pat_ident(&mut self, node: &'ast syn::PatIdent) {
                self.0.pointers.remove(&node.ident);
            }
        }
        syn::visit::Visit::visit_pat(&mut Names(self), pat);
    }

    /// Visits `body` with the names `pats` bind shadowing global pointers
    /// of the same name, which are back after it.
    fn visit_scoped<'p>(
        &mut self,
        pats: impl IntoIterator<Item = &'p Pat>,
        body: impl FnOnce(&mut Self),
    ) {
        let outer = self.pointers.clone();
        for pat in pats {
            self.shadow(pat);
        }
        body(self);
        self.pointers = outer;
    }

    /// The `let` patterns of an `if` or `while` condition (`let P = e`,
    /// also chained with `&&`), their values visited as they are.
    fn condition_patterns(&mut self, cond: &mut Expr) -> Vec<Pat> {
        match cond {
            Expr::Let(binding) => {
                self.visit_expr_mut(&mut binding.expr);
                vec![(*binding.pat).clone()]
            }
            Expr::Binary(binary) if matches!(binary.op, BinOp::And(_)) => {
                let mut pats = self.condition_patterns(&mut binary.left);
                // A later operand sees the earlier ones' names.
                let outer = self.pointers.clone();
                for pat in &pats {
                    self.shadow(pat);
                }
                pats.extend(self.condition_patterns(&mut binary.right));
                self.pointers = outer;
                pats
            }
            other => {
                self.visit_expr_mut(other);
                Vec::new()
            }
        }
    }

    /// A deref used as a place (`&*p`, `&(*p).field`, the receiver of
    /// `(*p).method()`): only its pointer is visited; the access stays as
    /// written (not traced).
    fn visit_place(&mut self, place: &mut Expr) {
        match place {
            Expr::Unary(unary) if matches!(unary.op, UnOp::Deref(_)) => {
                self.visit_expr_mut(&mut unary.expr)
            }
            Expr::Paren(paren) => self.visit_place(&mut paren.expr),
            Expr::Field(field) => self.visit_place(&mut field.base),
            Expr::Index(index) => {
                self.visit_place(&mut index.expr);
                self.visit_expr_mut(&mut index.index);
            }
            other => self.visit_expr_mut(other),
        }
    }
}

/// A local of the rewrite: spanned at `Span::mixed_site()`, so that the
/// user's pointer expression, evaluated after it is bound, still sees the
/// user's variable of the same name.
fn generated(name: &str) -> Ident {
    Ident::new(name, proc_macro2::Span::mixed_site())
}

/// `+=` -> `+`, ...; `None` for other operators.
fn compound_operator(op: &BinOp) -> Option<proc_macro2::TokenStream> {
    Some(match op {
        BinOp::AddAssign(_) => quote!(+),
        BinOp::SubAssign(_) => quote!(-),
        BinOp::MulAssign(_) => quote!(*),
        BinOp::DivAssign(_) => quote!(/),
        BinOp::RemAssign(_) => quote!(%),
        BinOp::BitXorAssign(_) => quote!(^),
        BinOp::BitAndAssign(_) => quote!(&),
        BinOp::BitOrAssign(_) => quote!(|),
        BinOp::ShlAssign(_) => quote!(<<),
        BinOp::ShrAssign(_) => quote!(>>),
        _ => return None,
    })
}

impl VisitMut for Tracer<'_> {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        let runtime = crate::runtime::runtime_path();
        let memory = quote!(#runtime::memory);
        match expr {
            // A write through a global pointer, `*p = v` or `(*p).f = v`
            // (compound assignments load, then store).
            Expr::Assign(assign) if self.global_pointer(&assign.left).is_some() => {
                self.check_write(&assign.left);
                self.visit_expr_mut(&mut assign.right);
                let address = self.written_address(&mut assign.left);
                let value = &assign.right;
                let temporary = generated("__value");
                // Rust evaluates the value before the place; so does this.
                *expr = syn::parse_quote_spanned!(assign.span()=> {
                    let #temporary = #value;
                    #memory::store(#address, #temporary)
                });
            }
            Expr::Binary(binary)
                if self.global_pointer(&binary.left).is_some()
                    && compound_operator(&binary.op).is_some() =>
            {
                let operator = compound_operator(&binary.op).expect("checked");
                self.check_write(&binary.left);
                self.visit_expr_mut(&mut binary.right);
                let address = self.written_address(&mut binary.left);
                let value = &binary.right;
                let (temporary, pointer) = (generated("__value"), generated("__address"));
                *expr = syn::parse_quote_spanned!(binary.span()=> {
                    let #temporary = #value;
                    let #pointer = #address;
                    #memory::store(#pointer, #memory::load(#pointer) #operator #temporary)
                });
            }
            Expr::Field(field) if self.global_deref(&field.base).is_some() => {
                let mut pointer = self.global_deref(&field.base).cloned().expect("checked");
                let load = self.load_function(&pointer);
                self.visit_expr_mut(&mut pointer);
                let member = &field.member;
                *expr = syn::parse_quote_spanned!(field.span()=> #memory::#load(#pointer).#member);
            }
            // An element read, `(*p)[i]` (or of a field): loaded from its
            // own address, with the element's alignment, as the plain read.
            Expr::Index(index) if self.global_pointer(&index.expr).is_some() => {
                let pointer = self.global_pointer(&index.expr).expect("checked");
                let load = self.load_function(pointer);
                self.visit_place(expr);
                *expr = syn::parse_quote_spanned!(expr.span()=>
                    #memory::#load(::core::ptr::addr_of!(#expr)));
            }
            Expr::Unary(unary)
                if matches!(unary.op, UnOp::Deref(_)) && self.parameter(&unary.expr).is_some() =>
            {
                let load = self.load_function(&unary.expr);
                self.visit_expr_mut(&mut unary.expr);
                let pointer = &unary.expr;
                *expr = syn::parse_quote_spanned!(unary.span()=> #memory::#load(#pointer));
            }
            Expr::Reference(reference) => self.visit_place(&mut reference.expr),
            // A field of a field: the inner one is read (the arm above
            // traces `(*p).f` of `(*p).f.g`).
            Expr::Field(field) => self.visit_expr_mut(&mut field.base),
            Expr::MethodCall(call) => {
                self.visit_place(&mut call.receiver);
                for arg in &mut call.args {
                    self.visit_expr_mut(arg);
                }
            }
            Expr::Index(index) => {
                self.visit_place(&mut index.expr);
                self.visit_expr_mut(&mut index.index);
            }
            // Macro arguments are tokens, not expressions: left as written.
            Expr::Macro(_) => {}
            // Names bound by patterns shadow global pointers in their scope.
            Expr::ForLoop(for_loop) => {
                self.visit_expr_mut(&mut for_loop.expr);
                let body = &mut for_loop.body;
                self.visit_scoped([&*for_loop.pat], |t| t.visit_block_mut(body));
            }
            Expr::Closure(closure) => {
                let body = &mut closure.body;
                self.visit_scoped(closure.inputs.iter(), |t| t.visit_expr_mut(body));
            }
            Expr::Match(matched) => {
                self.visit_expr_mut(&mut matched.expr);
                for arm in &mut matched.arms {
                    let (guard, body) = (&mut arm.guard, &mut arm.body);
                    self.visit_scoped([&arm.pat], |t| {
                        if let Some((_, guard)) = guard {
                            t.visit_expr_mut(guard);
                        }
                        t.visit_expr_mut(body);
                    });
                }
            }
            Expr::If(branch) => {
                let pats = self.condition_patterns(&mut branch.cond);
                let then = &mut branch.then_branch;
                self.visit_scoped(&pats, |t| t.visit_block_mut(then));
                if let Some((_, otherwise)) = &mut branch.else_branch {
                    self.visit_expr_mut(otherwise);
                }
            }
            Expr::While(looped) => {
                let pats = self.condition_patterns(&mut looped.cond);
                let body = &mut looped.body;
                self.visit_scoped(&pats, |t| t.visit_block_mut(body));
            }
            _ => visit_mut::visit_expr_mut(self, expr),
        }
    }

    fn visit_block_mut(&mut self, block: &mut Block) {
        // Locals shadow and extend the set of global pointers; a block's
        // locals end with it.
        let outer = self.pointers.clone();
        for stmt in &mut block.stmts {
            self.visit_stmt_mut(stmt);
            if let Stmt::Local(local) = stmt {
                let init = local.init.as_ref().map(|init| &*init.expr);
                self.bind(&local.pat, init);
            }
        }
        self.pointers = outer;
    }

    // Items nested in the body are compiled on their own, as written.
    fn visit_item_mut(&mut self, _item: &mut syn::Item) {}
}

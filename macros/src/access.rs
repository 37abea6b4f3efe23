//! The access analysis: reads a kernel body once, following `let` bindings,
//! and writes each global load and store through a pointer parameter as an
//! affine form (`clustered_abi::access`), which the typed handle carries as
//! `ACCESSES` and `#[clustered(auto)]` turns into proposals.
//!
//! It is a small symbolic evaluator over the syntax, not a compiler: it knows
//! the index getters of the device runtime, `index::at`/`at3`, `+ - *`,
//! shifts by literals, casts, pointer `add`/`sub`/`offset`, `read`/`write`,
//! tuples and loops. Anything else makes the value opaque, with the reason,
//! and an access through an opaque index is reported as not affine (the
//! paper's data-related class), never guessed.

use std::collections::{BTreeMap, HashMap, HashSet};

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{BinOp, Block, Expr, FnArg, ItemFn, Lit, Pat, Stmt, Type, UnOp};

use clustered_abi::access::{Axis, Direction};

/// A symbol, owned (the macro's side of `clustered_abi::access::Sym`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sym {
    Block(Axis),
    Thread(Axis),
    BlockDim(Axis),
    GridDim(Axis),
    Param(String),
    /// A named constant: its path, evaluated where the kernel is compiled.
    Const(String),
    Loop(String),
}

/// A polynomial: monomial (sorted symbols) to coefficient.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Poly(BTreeMap<Vec<Sym>, i64>);

impl Poly {
    fn constant(c: i64) -> Self {
        let mut p = Poly::default();
        if c != 0 {
            p.0.insert(Vec::new(), c);
        }
        p
    }

    fn sym(s: Sym) -> Self {
        Poly(BTreeMap::from([(vec![s], 1)]))
    }

    fn add(mut self, other: &Poly, sign: i64) -> Option<Self> {
        for (m, c) in &other.0 {
            let entry = self.0.entry(m.clone()).or_insert(0);
            *entry = entry.checked_add(c.checked_mul(sign)?)?;
            if *entry == 0 {
                self.0.remove(m);
            }
        }
        Some(self)
    }

    fn mul(&self, other: &Poly) -> Option<Self> {
        let mut out = Poly::default();
        for (ma, ca) in &self.0 {
            for (mb, cb) in &other.0 {
                let mut m = ma.clone();
                m.extend(mb.iter().cloned());
                m.sort();
                out = out.add(&Poly(BTreeMap::from([(m, ca.checked_mul(*cb)?)])), 1)?;
            }
        }
        Some(out)
    }

    fn as_constant(&self) -> Option<i64> {
        match self.0.len() {
            0 => Some(0),
            1 => self.0.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    /// Whether any monomial multiplies two of the position symbols (CTA,
    /// thread, loop): not affine in them.
    fn is_affine(&self) -> bool {
        self.0.keys().all(|m| {
            m.iter()
                .filter(|s| matches!(s, Sym::Block(_) | Sym::Thread(_) | Sym::Loop(_)))
                .count()
                <= 1
        })
    }
}

/// What an expression evaluates to.
#[derive(Clone, Debug)]
enum Value {
    Int(Poly),
    /// A pointer parameter, offset by this many elements (or by an offset
    /// the analysis does not follow, and why).
    Ptr(String, Result<Poly, String>),
    Tuple(Vec<Value>),
    /// Not followed, and why.
    Opaque(String),
}

impl Value {
    fn opaque(why: impl Into<String>) -> Self {
        Value::Opaque(why.into())
    }
}

/// An access found in the body.
pub struct Found {
    pub pointer: String,
    pub direction: Direction,
    /// The affine form, or why there is none and what the address depends
    /// on.
    pub index: Result<Poly, (String, Deps)>,
    pub loops: Vec<String>,
    /// The conditions on the path to it (`if`s around it, early `return`s
    /// before it), `None` where one is not an affine comparison.
    pub guards: Vec<Option<Cond>>,
    pub line: usize,
    pub source: String,
}

/// A condition that guards an access, over affine forms (what the
/// generated prefetch hook evaluates at the next task's CTA).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `left op right`, `op` one of `<`, `<=`, `>`, `>=`, `==`, `!=`.
    Compare(Poly, &'static str, Poly),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// A loop's counter and what is known of its trip count.
pub struct LoopInfo {
    pub counter: String,
    pub trips: Option<Poly>,
    pub step: Option<Poly>,
}

/// What the analysis learned about a kernel.
pub struct Analysis {
    pub accesses: Vec<Found>,
    pub loops: Vec<LoopInfo>,
    pub block_axes: [bool; 3],
    pub uses_shared_memory: bool,
    /// Pointer parameters and their element types.
    pub pointers: Vec<(String, Type)>,
    /// Every parameter's name, in order.
    pub parameters: Vec<String>,
    /// Closures, macro calls and macro definitions that name pointer
    /// parameters, which the analysis does not read (`abi::Unseen`).
    pub unseen: Vec<Unseen>,
    /// `TABLE.read(i)` of a constant (a `SCREAMING_CASE` path: what
    /// `constant_table!` declares) at an index that depends on the thread's
    /// index: the table's name and the index's span.
    pub divergent_constant_reads: Vec<(String, proc_macro2::Span)>,
}

/// Code the analysis does not read that names pointer parameters.
pub struct Unseen {
    pub what: String,
    /// The pointer parameters it names, directly or through a local the
    /// analysis knows points into one.
    pub pointers: Vec<String>,
    /// Where it is: its line in the report, the warning's span.
    pub span: proc_macro2::Span,
}

impl Unseen {
    pub fn line(&self) -> usize {
        line_of(self.span)
    }
}

struct Evaluator {
    env: HashMap<String, Value>,
    analysis: Analysis,
    loops: Vec<String>,
    /// Loop counters' names already used (a name is made unique per loop).
    counters: HashSet<String>,
    /// Whether accesses are recorded (not while reading a loop's step or
    /// bound a second time).
    recording: bool,
    /// What each variable depends on, for addresses that are not affine.
    deps: DepTable,
    /// The conditions that hold where the evaluator is (`Found::guards`).
    guards: Vec<Option<Cond>>,
}

/// Reads `function`'s body.
pub fn analyse(function: &ItemFn) -> Analysis {
    let mut env = HashMap::new();
    let mut pointers = Vec::new();
    let mut parameters = Vec::new();
    for (i, input) in function.sig.inputs.iter().enumerate() {
        let FnArg::Typed(typed) = input else { continue };
        let Pat::Ident(ident) = &*typed.pat else {
            parameters.push(format!("parameter {i}"));
            continue;
        };
        let name = ident.ident.to_string();
        parameters.push(name.clone());
        let value = match &*typed.ty {
            Type::Ptr(ptr) => {
                pointers.push((name.clone(), (*ptr.elem).clone()));
                Value::Ptr(name.clone(), Ok(Poly::default()))
            }
            Type::Path(path)
                if path.path.get_ident().is_some_and(|t| {
                    [
                        "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
                    ]
                    .iter()
                    .any(|int| t == int)
                }) =>
            {
                Value::Int(Poly::sym(Sym::Param(name.clone())))
            }
            _ => Value::opaque(format!("the parameter `{name}` is not an integer")),
        };
        env.insert(name, value);
    }
    let mut evaluator = Evaluator {
        env,
        analysis: Analysis {
            accesses: Vec::new(),
            loops: Vec::new(),
            block_axes: [false; 3],
            uses_shared_memory: false,
            pointers,
            parameters,
            unseen: Vec::new(),
            divergent_constant_reads: Vec::new(),
        },
        loops: Vec::new(),
        counters: HashSet::new(),
        recording: true,
        guards: Vec::new(),
        deps: DepTable::build(&function.block),
    };
    evaluator.block(&function.block);
    evaluator.analysis
}

/// The name of `expr` if it is a path to a constant by Rust's naming
/// (`TAPS`, `tables::TAPS`): what `constant_table!` declares.
fn constant_path(expr: &Expr) -> Option<String> {
    let Expr::Path(path) = strip(expr) else {
        return None;
    };
    let name = path.path.segments.last()?.ident.to_string();
    let screaming = name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    screaming.then_some(name)
}

fn axis_of(name: &str, prefix: &str) -> Option<Axis> {
    match name.strip_prefix(prefix)? {
        "x" => Some(Axis::X),
        "y" => Some(Axis::Y),
        "z" => Some(Axis::Z),
        _ => None,
    }
}

/// Whether `block` ends in a `return` (so what follows it in the enclosing
/// block runs only where its `if` was false).
fn returns(block: &Block) -> bool {
    matches!(block.stmts.last(), Some(Stmt::Expr(Expr::Return(_), _)))
}

fn line_of(span: proc_macro2::Span) -> usize {
    span.start().line
}

/// Adds to `out` the pointer parameters that `value` points into (a
/// tuple's too), each once.
fn pointed_into(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Ptr(parameter, _) if !out.contains(parameter) => out.push(parameter.clone()),
        Value::Tuple(values) => values.iter().for_each(|v| pointed_into(v, out)),
        _ => {}
    }
}

/// Calls `each` with every identifier in `tokens`, groups included.
fn named_idents(tokens: TokenStream, each: &mut impl FnMut(&proc_macro2::Ident)) {
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Ident(ident) => each(&ident),
            proc_macro2::TokenTree::Group(group) => named_idents(group.stream(), each),
            _ => {}
        }
    }
}

impl Evaluator {
    fn block(&mut self, block: &Block) -> Value {
        let saved = self.env.clone();
        let guards = self.guards.len();
        let mut last = Value::Tuple(Vec::new());
        for stmt in &block.stmts {
            last = self.stmt(stmt);
            // `if cond { ..; return; }`: what follows runs where `!cond`;
            // after any other statement that can return, where the
            // analysis cannot say.
            match stmt {
                Stmt::Expr(Expr::If(branch), _)
                    if branch.else_branch.is_none() && returns(&branch.then_branch) =>
                {
                    let cond = self.cond(&branch.cond).map(|c| Cond::Not(Box::new(c)));
                    self.guards.push(cond);
                }
                stmt if crate::clustered::analyse::returns_in(stmt) => self.guards.push(None),
                _ => {}
            }
        }
        self.guards.truncate(guards);
        // Bindings end with the block; assignments to outer variables are
        // kept (a value assigned in a branch stays as assigned: the
        // analysis follows one path, and loops make their variables
        // counters before they get here).
        let shadowed: Vec<String> = block
            .stmts
            .iter()
            .filter_map(|stmt| match stmt {
                Stmt::Local(local) => Some(pattern_names(&local.pat)),
                _ => None,
            })
            .flatten()
            .collect();
        self.env.retain(|name, _| saved.contains_key(name));
        for name in shadowed {
            if let Some(old) = saved.get(&name) {
                self.env.insert(name, old.clone());
            }
        }
        last
    }

    fn stmt(&mut self, stmt: &Stmt) -> Value {
        match stmt {
            Stmt::Local(local) => {
                let value = match &local.init {
                    Some(init) => {
                        let value = self.expr(&init.expr);
                        if let Some((_, diverge)) = &init.diverge {
                            self.expr(diverge);
                        }
                        value
                    }
                    None => Value::opaque("declared without a value"),
                };
                self.bind(&local.pat, value);
                Value::Tuple(Vec::new())
            }
            Stmt::Expr(expr, semi) => {
                let value = self.expr(expr);
                if semi.is_some() {
                    Value::Tuple(Vec::new())
                } else {
                    value
                }
            }
            Stmt::Item(syn::Item::Const(item)) => {
                let value = self.expr(&item.expr);
                self.env.insert(item.ident.to_string(), value);
                Value::Tuple(Vec::new())
            }
            // `macro_rules! name { .. }`; any other item macro is a call.
            Stmt::Item(syn::Item::Macro(item)) if item.ident.is_some() => {
                self.unseen("a macro definition", item.mac.tokens.clone(), item.span());
                Value::Tuple(Vec::new())
            }
            Stmt::Item(syn::Item::Macro(item)) => {
                self.macro_call(&item.mac);
                Value::Tuple(Vec::new())
            }
            Stmt::Item(_) => Value::Tuple(Vec::new()),
            Stmt::Macro(mac) => self.macro_call(&mac.mac),
        }
    }

    fn bind(&mut self, pat: &Pat, value: Value) {
        match (pat, value) {
            (Pat::Ident(ident), value) => {
                self.env.insert(ident.ident.to_string(), value);
            }
            (Pat::Type(typed), value) => self.bind(&typed.pat, value),
            (Pat::Tuple(tuple), Value::Tuple(values)) if tuple.elems.len() == values.len() => {
                for (p, v) in tuple.elems.iter().zip(values) {
                    self.bind(p, v);
                }
            }
            (pat, _) => {
                for name in pattern_names(pat) {
                    self.env.insert(
                        name,
                        Value::opaque("bound by a pattern the analysis does not follow"),
                    );
                }
            }
        }
    }

    fn expr(&mut self, expr: &Expr) -> Value {
        match expr {
            Expr::Lit(lit) => match &lit.lit {
                Lit::Int(int) => int
                    .base10_parse::<i64>()
                    .map(|v| Value::Int(Poly::constant(v)))
                    .unwrap_or_else(|_| Value::opaque("a literal beyond i64")),
                _ => Value::opaque("not an integer"),
            },
            Expr::Path(path) => {
                if let Some(ident) = path.path.get_ident() {
                    if let Some(value) = self.env.get(&ident.to_string()) {
                        return value.clone();
                    }
                }
                let last = path.path.segments.last().map(|s| s.ident.to_string());
                match last {
                    Some(name)
                        if name.len() > 1
                            && name.chars().all(|c| {
                                c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'
                            }) =>
                    {
                        Value::Int(Poly::sym(Sym::Const(
                            path.path.to_token_stream().to_string().replace(' ', ""),
                        )))
                    }
                    _ => Value::opaque(format!(
                        "`{}` is not a value the analysis follows",
                        path.path.to_token_stream()
                    )),
                }
            }
            Expr::Paren(inner) => self.expr(&inner.expr),
            Expr::Group(inner) => self.expr(&inner.expr),
            Expr::Cast(cast) => self.expr(&cast.expr),
            Expr::Reference(reference) => self.expr(&reference.expr),
            Expr::Tuple(tuple) => Value::Tuple(tuple.elems.iter().map(|e| self.expr(e)).collect()),
            Expr::Unary(unary) => match unary.op {
                UnOp::Neg(_) => match self.expr(&unary.expr) {
                    Value::Int(p) => Poly::default()
                        .add(&p, -1)
                        .map_or_else(|| Value::opaque("overflow"), Value::Int),
                    _ => Value::opaque("negation of an opaque value"),
                },
                UnOp::Deref(_) => {
                    let pointer = self.expr(&unary.expr);
                    self.access(&pointer, &unary.expr, Direction::Load, expr);
                    Value::opaque("a value loaded from memory")
                }
                _ => {
                    self.expr(&unary.expr);
                    Value::opaque("a logical operation")
                }
            },
            Expr::Binary(binary) => self.binary(binary, expr),
            Expr::Assign(assign) => {
                let value = self.expr(&assign.right);
                self.assign(&assign.left, value, Direction::Store, expr);
                Value::Tuple(Vec::new())
            }
            Expr::Call(call) => self.call(call),
            Expr::MethodCall(call) => self.method(call, expr),
            Expr::Block(block) => self.block(&block.block),
            Expr::Unsafe(block) => self.block(&block.block),
            Expr::If(branch) => {
                self.expr(&branch.cond);
                let cond = self.cond(&branch.cond);
                self.guards.push(cond.clone());
                self.block(&branch.then_branch);
                self.guards.pop();
                if let Some((_, other)) = &branch.else_branch {
                    self.guards.push(cond.map(|c| Cond::Not(Box::new(c))));
                    self.expr(other);
                    self.guards.pop();
                }
                Value::opaque("chosen by a condition")
            }
            Expr::Match(m) => {
                self.expr(&m.expr);
                self.guards.push(None);
                for arm in &m.arms {
                    self.expr(&arm.body);
                }
                self.guards.pop();
                Value::opaque("chosen by a match")
            }
            Expr::ForLoop(for_loop) => {
                let counter = self.counter(
                    pattern_names(&for_loop.pat)
                        .first()
                        .map_or("i", String::as_str),
                );
                let (trips, step) = match &*for_loop.expr {
                    Expr::Range(range) => {
                        let start = range.start.as_ref().map(|e| self.expr(e));
                        let end = range.end.as_ref().map(|e| self.expr(e));
                        let trips = match (&start, end) {
                            (Some(Value::Int(s)), Some(Value::Int(e))) => e.add(s, -1),
                            (None, Some(Value::Int(e))) => Some(e),
                            _ => None,
                        };
                        // The counter is `start + Loop`.
                        let value = match start {
                            Some(Value::Int(s)) => s.add(&Poly::sym(Sym::Loop(counter.clone())), 1),
                            None => Some(Poly::sym(Sym::Loop(counter.clone()))),
                            _ => None,
                        };
                        self.bind(
                            &for_loop.pat,
                            value.map_or_else(
                                || Value::opaque("a loop counter from an opaque start"),
                                Value::Int,
                            ),
                        );
                        (trips, Some(Poly::constant(1)))
                    }
                    other if enumerated(other) => {
                        // `for (u, x) in xs.iter().enumerate()`: `u` counts
                        // from 0 like a range's counter; the item is opaque.
                        self.expr(other);
                        let position = Value::Int(Poly::sym(Sym::Loop(counter.clone())));
                        let item = Value::opaque("an item of an iterator");
                        self.bind(&for_loop.pat, Value::Tuple(vec![position, item]));
                        (None, Some(Poly::constant(1)))
                    }
                    other => {
                        self.expr(other);
                        self.bind(&for_loop.pat, Value::opaque("an item of an iterator"));
                        (None, None)
                    }
                };
                self.analysis.loops.push(LoopInfo {
                    counter: counter.clone(),
                    trips,
                    step,
                });
                self.in_loop(counter, &for_loop.body, None);
                Value::Tuple(Vec::new())
            }
            Expr::While(while_loop) => {
                let counter = self.counter("while");
                let cond = while_loop.cond.clone();
                self.in_loop(counter, &while_loop.body, Some(&cond));
                Value::Tuple(Vec::new())
            }
            Expr::Loop(lp) => {
                let counter = self.counter("loop");
                self.in_loop(counter, &lp.body, None);
                Value::Tuple(Vec::new())
            }
            Expr::Return(ret) => {
                if let Some(e) = &ret.expr {
                    self.expr(e);
                }
                Value::opaque("returned")
            }
            Expr::Closure(closure) => {
                self.unseen("a closure", closure.body.to_token_stream(), closure.span());
                Value::opaque("a closure")
            }
            Expr::Index(index) => {
                self.expr(&index.expr);
                self.expr(&index.index);
                Value::opaque("an element of an array")
            }
            Expr::Field(field) => {
                self.expr(&field.base);
                Value::opaque("a field")
            }
            Expr::Array(array) => {
                for e in &array.elems {
                    self.expr(e);
                }
                Value::opaque("an array")
            }
            Expr::Macro(mac) => self.macro_call(&mac.mac),
            _ => Value::opaque("an expression the analysis does not follow"),
        }
    }

    /// A macro call in the body: `shared_array!` is the runtime's; any
    /// other is not read (`Unseen`, if it names a pointer parameter).
    fn macro_call(&mut self, mac: &syn::Macro) -> Value {
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        if name.as_deref() == Some("shared_array") {
            self.analysis.uses_shared_memory = true;
        } else {
            let what = format!("a macro call `{}!`", name.unwrap_or_default());
            self.unseen(&what, mac.tokens.clone(), mac.span());
        }
        Value::opaque("a macro")
    }

    /// Records code the analysis does not read (`tokens`, at `span`) if
    /// it names a pointer: a pointer parameter, or a local whose value
    /// the evaluator knows points into one (`let row = input.add(..)`).
    /// Its accesses are missing, and the report says so rather than show a
    /// kernel with fewer accesses than it has. Recorded like an access:
    /// once, not while a loop's step or bound is read again.
    fn unseen(&mut self, what: &str, tokens: TokenStream, span: proc_macro2::Span) {
        if !self.recording {
            return;
        }
        let mut pointers = Vec::new();
        named_idents(tokens, &mut |ident| {
            if let Some(value) = self.env.get(&ident.to_string()) {
                pointed_into(value, &mut pointers);
            }
        });
        self.unseen_through(what, pointers, span);
    }

    /// Records code the analysis does not read (at `span`) that is handed
    /// `pointers`, the pointer parameters it may load or store through.
    fn unseen_through(&mut self, what: &str, pointers: Vec<String>, span: proc_macro2::Span) {
        if self.recording && !pointers.is_empty() {
            self.analysis.unseen.push(Unseen {
                what: what.to_string(),
                pointers,
                span,
            });
        }
    }

    /// A fresh loop counter name.
    fn counter(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut n = 1;
        while !self.counters.insert(name.clone()) {
            n += 1;
            name = format!("{base}{n}");
        }
        name
    }

    /// Evaluates a loop body once, with every variable the body assigns
    /// made a function of the loop's progress (`start + Loop`), so that an
    /// index stepped by `k += TILE` or a pointer stepped by `p = p.add(n)`
    /// stays affine. For a `while c < end` whose body adds `step` to `c`,
    /// records the trip count.
    fn in_loop(&mut self, counter: String, body: &Block, cond: Option<&Expr>) {
        let assigned = assigned_in(body);
        let progress = Poly::sym(Sym::Loop(counter.clone()));
        let mut steps = Vec::new();
        for name in &assigned {
            let step = step_of(body, name).map(|e| self.quietly(|this| this.expr(&e)));
            let value = match self.env.get(name).cloned() {
                Some(Value::Int(start)) => match &step {
                    // `c += step`: `start + step * Loop`, with Loop the trip.
                    Some(Value::Int(step)) => step
                        .mul(&progress)
                        .and_then(|moved| start.add(&moved, 1))
                        .map(Value::Int),
                    _ => start.add(&progress, 1).map(Value::Int),
                },
                Some(Value::Ptr(base, Ok(offset))) => match &step {
                    Some(Value::Int(step)) => {
                        step.mul(&progress).and_then(|moved| offset.add(&moved, 1))
                    }
                    _ => offset.add(&progress, 1),
                }
                .map(|o| Value::Ptr(base, Ok(o))),
                Some(Value::Ptr(base, Err(why))) => Some(Value::Ptr(base, Err(why))),
                _ => None,
            }
            .unwrap_or_else(|| Value::opaque(format!("`{name}` changes in a loop")));
            if let (Some(Value::Int(start)), Some(Value::Int(step))) = (self.env.get(name), &step) {
                steps.push((name.clone(), start.clone(), step.clone()));
            }
            self.env.insert(name.clone(), value);
        }
        if let Some(cond) = cond {
            self.expr(cond);
            // `while c < end` with `c += step`: (end - start) / step trips;
            // kept as `end - start` with the step beside it.
            let mut info = LoopInfo {
                counter: counter.clone(),
                trips: None,
                step: None,
            };
            if let Expr::Binary(binary) = strip(cond) {
                if let (BinOp::Lt(_), Expr::Path(path)) = (binary.op, strip(&binary.left)) {
                    let name = path.path.get_ident().map(|i| i.to_string());
                    if let Some((_, start, step)) =
                        steps.iter().find(|(n, _, _)| Some(n) == name.as_ref())
                    {
                        if let Value::Int(end) = self.quietly(|this| this.expr(&binary.right)) {
                            info.trips = end.add(start, -1);
                            info.step = Some(step.clone());
                        }
                    }
                }
            }
            self.analysis.loops.push(info);
        } else if !self.analysis.loops.iter().any(|l| l.counter == counter) {
            self.analysis.loops.push(LoopInfo {
                counter: counter.clone(),
                trips: None,
                step: None,
            });
        }
        self.loops.push(counter);
        self.block(body);
        self.loops.pop();
        // After the loop, the variables are wherever it left them.
        for name in assigned {
            self.env.insert(
                name.clone(),
                Value::opaque(format!("`{name}` after a loop")),
            );
        }
    }

    fn binary(&mut self, binary: &syn::ExprBinary, whole: &Expr) -> Value {
        use BinOp::*;
        match binary.op {
            AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) | RemAssign(_)
            | BitXorAssign(_) | BitAndAssign(_) | BitOrAssign(_) | ShlAssign(_) | ShrAssign(_) => {
                let right = self.expr(&binary.right);
                let left = self.expr_no_access(&binary.left);
                let value = match (binary.op, left, right) {
                    (AddAssign(_), Value::Int(l), Value::Int(r)) => l.add(&r, 1).map(Value::Int),
                    (SubAssign(_), Value::Int(l), Value::Int(r)) => l.add(&r, -1).map(Value::Int),
                    (MulAssign(_), Value::Int(l), Value::Int(r)) => l.mul(&r).map(Value::Int),
                    _ => None,
                }
                .unwrap_or_else(|| Value::opaque("updated in place"));
                self.assign(&binary.left, value, Direction::Update, whole);
                Value::Tuple(Vec::new())
            }
            _ => {
                let (l, r) = (self.expr(&binary.left), self.expr(&binary.right));
                let (Value::Int(l), Value::Int(r)) = (l, r) else {
                    return Value::opaque("arithmetic on an opaque value");
                };
                let result = match binary.op {
                    Add(_) => l.add(&r, 1),
                    Sub(_) => l.add(&r, -1),
                    Mul(_) => l.mul(&r),
                    Shl(_) => r
                        .as_constant()
                        .filter(|s| (0..62).contains(s))
                        .and_then(|s| l.mul(&Poly::constant(1 << s))),
                    Div(_) | Rem(_) | Shr(_) => {
                        return Value::opaque("a division, remainder or right shift")
                    }
                    _ => return Value::opaque("not arithmetic"),
                };
                result.map_or_else(|| Value::opaque("overflow"), Value::Int)
            }
        }
    }

    /// Evaluates a place without counting it as a load (`x` in `x += 1`,
    /// `*p` in `*p += v`, which [`assign`] records as one update).
    fn expr_no_access(&mut self, expr: &Expr) -> Value {
        match strip(expr) {
            Expr::Unary(syn::ExprUnary {
                op: UnOp::Deref(_), ..
            }) => Value::opaque("a value loaded from memory"),
            other => self.expr(other),
        }
    }

    fn assign(&mut self, left: &Expr, value: Value, direction: Direction, whole: &Expr) {
        match strip(left) {
            Expr::Path(path) if path.path.get_ident().is_some() => {
                let name = path.path.get_ident().unwrap().to_string();
                // A variable the enclosing loop made a counter stays one.
                let is_counter = matches!(self.env.get(&name), Some(Value::Int(p)) if p.0.keys().any(|m| m.iter().any(|s| matches!(s, Sym::Loop(_)))))
                    || matches!(self.env.get(&name), Some(Value::Ptr(_, Ok(p))) if p.0.keys().any(|m| m.iter().any(|s| matches!(s, Sym::Loop(_)))));
                if !is_counter || self.loops.is_empty() {
                    self.env.insert(name, value);
                }
            }
            Expr::Unary(syn::ExprUnary {
                op: UnOp::Deref(_),
                expr,
                ..
            }) => {
                let pointer = self.expr(expr);
                self.access(&pointer, expr, direction, whole);
            }
            other => {
                self.expr(other);
            }
        }
    }

    fn call(&mut self, call: &syn::ExprCall) -> Value {
        let name = match &*call.func {
            Expr::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        }
        .unwrap_or_default();
        // `unroll::<N>(count, |k| body)` (`clustered_device::unroll`) runs
        // `body` for `k` in `0..count`: read as that `for` loop.
        if let Some(for_loop) = unroll_as_for(&name, call) {
            return self.expr(&for_loop);
        }
        let args: Vec<Value> = call.args.iter().map(|a| self.expr(a)).collect();
        let int = |v: &Value| match v {
            Value::Int(p) => Some(p.clone()),
            _ => None,
        };
        let getter = [
            ("block_idx_", Sym::Block as fn(Axis) -> Sym),
            ("thread_idx_", Sym::Thread),
            ("block_dim_", Sym::BlockDim),
            ("grid_dim_", Sym::GridDim),
        ]
        .into_iter()
        .find_map(|(prefix, sym)| axis_of(&name, prefix).map(&sym));
        if let Some(sym) = getter {
            if let Sym::Block(axis) = sym {
                self.analysis.block_axes[axis as usize] = true;
            }
            return Value::Int(Poly::sym(sym));
        }
        let global = |axis: Axis| {
            Poly::sym(Sym::Block(axis))
                .mul(&Poly::sym(Sym::BlockDim(axis)))
                .and_then(|p| p.add(&Poly::sym(Sym::Thread(axis)), 1))
        };
        if let (Some(direction), Some(pointer)) = (memory_access(&name, args.len()), args.first()) {
            self.access(pointer, &call.args[0], direction, &Expr::Call(call.clone()));
            return accessed(direction);
        }
        let result = match (name.as_str(), args.as_slice()) {
            ("index_1d", []) => {
                self.analysis.block_axes[0] = true;
                global(Axis::X).map(Value::Int)
            }
            ("index_2d", []) => {
                self.analysis.block_axes[0] = true;
                self.analysis.block_axes[1] = true;
                global(Axis::X)
                    .zip(global(Axis::Y))
                    .map(|(x, y)| Value::Tuple(vec![Value::Int(x), Value::Int(y)]))
            }
            ("at", [r, w, c]) => (|| int(r)?.mul(&int(w)?)?.add(&int(c)?, 1))().map(Value::Int),
            // `memory::unstepped` hides its value from LLVM, not from this
            // analysis: the identity.
            ("unstepped", [x]) => Some(x.clone()),
            ("at3", [z, h, y, w, x]) => (|| {
                int(z)?
                    .mul(&int(h)?)?
                    .add(&int(y)?, 1)?
                    .mul(&int(w)?)?
                    .add(&int(x)?, 1)
            })()
            .map(Value::Int),
            // A prefetch is a hint: it loads nothing the kernel reads.
            ("prefetch_l1" | "prefetch_l2", [_]) => Some(Value::Tuple(Vec::new())),
            _ => None,
        };
        if result.is_none() {
            // A function the analysis does not read: whatever it loads or
            // stores through a pointer handed to it is missing.
            let mut pointers = Vec::new();
            args.iter().for_each(|a| pointed_into(a, &mut pointers));
            self.unseen_through(&format!("a call to `{name}`"), pointers, call.span());
        }
        result.unwrap_or_else(|| Value::opaque(format!("the result of `{name}`")))
    }

    fn method(&mut self, call: &syn::ExprMethodCall, whole: &Expr) -> Value {
        let receiver = self.expr(&call.receiver);
        let args: Vec<Value> = call.args.iter().map(|a| self.expr(a)).collect();
        let method = call.method.to_string();
        // What an unknown method may load or store through: the pointers
        // in its receiver and arguments.
        let mut handed = Vec::new();
        std::iter::once(&receiver)
            .chain(&args)
            .for_each(|v| pointed_into(v, &mut handed));
        if let (true, "read", Some(table), 1) = (
            self.recording,
            method.as_str(),
            constant_path(&call.receiver),
            call.args.len(),
        ) {
            // The thread's index anywhere in what the index is computed
            // from (`bx*bdx + tx`, `tx % 32`), not through loads or `/ 32`.
            if self.deps.of(&call.args[0]).thread {
                self.analysis
                    .divergent_constant_reads
                    .push((table, call.args[0].span()));
            }
        }
        // `p.read()`, `p.write(v)`: the receiver is the first argument.
        if let (Value::Ptr(..), Some(direction)) =
            (&receiver, memory_access(&method, args.len() + 1))
        {
            self.access(&receiver, &call.receiver, direction, whole);
            return accessed(direction);
        }
        match (method.as_str(), receiver, args.as_slice()) {
            (
                "add" | "offset" | "wrapping_add" | "wrapping_offset" | "sub" | "wrapping_sub",
                Value::Ptr(base, offset),
                [by],
            ) => {
                let sign = if method.ends_with("sub") { -1 } else { 1 };
                let offset = match (offset, by) {
                    (Ok(offset), Value::Int(by)) => {
                        offset.add(by, sign).ok_or_else(|| "overflow".to_string())
                    }
                    (Err(why), _) => Err(why),
                    (_, Value::Opaque(why)) => Err(why.clone()),
                    _ => Err("an offset that is not an integer".to_string()),
                };
                Value::Ptr(base, offset)
            }
            ("cast" | "cast_mut" | "cast_const", pointer @ Value::Ptr(..), []) => pointer,
            ("wrapping_add", Value::Int(a), [Value::Int(b)]) => a
                .add(b, 1)
                .map_or_else(|| Value::opaque("overflow"), Value::Int),
            ("wrapping_sub", Value::Int(a), [Value::Int(b)]) => a
                .add(b, -1)
                .map_or_else(|| Value::opaque("overflow"), Value::Int),
            ("wrapping_mul", Value::Int(a), [Value::Int(b)]) => a
                .mul(b)
                .map_or_else(|| Value::opaque("overflow"), Value::Int),
            ("into" | "try_into" | "unwrap", v @ Value::Int(_), []) => v,
            _ => {
                // Pointer methods that touch no memory; any other is
                // code the analysis does not read.
                let inert = [
                    "is_null",
                    "offset_from",
                    "addr",
                    "align_offset",
                    "is_aligned",
                    "cast",
                    "cast_mut",
                    "cast_const",
                ];
                if !inert.contains(&method.as_str()) {
                    self.unseen_through(&format!("a call of `.{method}()`"), handed, call.span());
                }
                Value::opaque(format!("the result of `.{method}()`"))
            }
        }
    }

    /// `e` as a [`Cond`], if it is comparisons of affine forms joined by
    /// `&&`, `||` and `!` (read without recording accesses).
    fn cond(&mut self, e: &Expr) -> Option<Cond> {
        match e {
            Expr::Paren(inner) => self.cond(&inner.expr),
            Expr::Unary(syn::ExprUnary {
                op: UnOp::Not(_),
                expr,
                ..
            }) => Some(Cond::Not(Box::new(self.cond(expr)?))),
            Expr::Binary(binary) => {
                let op = match binary.op {
                    BinOp::And(_) => {
                        let (l, r) = (self.cond(&binary.left)?, self.cond(&binary.right)?);
                        return Some(Cond::And(Box::new(l), Box::new(r)));
                    }
                    BinOp::Or(_) => {
                        let (l, r) = (self.cond(&binary.left)?, self.cond(&binary.right)?);
                        return Some(Cond::Or(Box::new(l), Box::new(r)));
                    }
                    BinOp::Lt(_) => "<",
                    BinOp::Le(_) => "<=",
                    BinOp::Gt(_) => ">",
                    BinOp::Ge(_) => ">=",
                    BinOp::Eq(_) => "==",
                    BinOp::Ne(_) => "!=",
                    _ => return None,
                };
                let (l, r) = self.quietly(|me| (me.expr(&binary.left), me.expr(&binary.right)));
                // A loop counter has no value where the hook runs.
                let counted = |p: &Poly| p.0.keys().flatten().any(|s| matches!(s, Sym::Loop(_)));
                match (l, r) {
                    (Value::Int(l), Value::Int(r)) if !counted(&l) && !counted(&r) => {
                        Some(Cond::Compare(l, op, r))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Runs `f` without recording accesses.
    fn quietly<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let was = std::mem::replace(&mut self.recording, false);
        let out = f(self);
        self.recording = was;
        out
    }

    /// Records an access through `pointer` (the value of the expression
    /// `place`), which is all of `whole`'s source.
    fn access(&mut self, pointer: &Value, place: &Expr, direction: Direction, whole: &Expr) {
        if !self.recording {
            return;
        }
        let Value::Ptr(base, offset) = pointer else {
            // Not through a pointer parameter: shared memory, a local.
            return;
        };
        let index = match offset {
            Ok(offset) if offset.is_affine() => Ok(offset.clone()),
            Ok(_) => Err(("a product of two indices".to_string(), self.deps.of(place))),
            Err(why) => Err((why.clone(), self.deps.of(place))),
        };
        self.analysis.accesses.push(Found {
            pointer: base.clone(),
            direction,
            index,
            loops: self.loops.clone(),
            guards: self.guards.clone(),
            line: line_of(whole.span()),
            source: tidy(&whole.to_token_stream().to_string()),
        });
    }
}

/// The functions read as an access through their first argument, by
/// name and number of arguments: `core::ptr`'s reads and writes, and the
/// device runtime's loads, stores and atomics (`clustered_device::memory`,
/// `::atomic`; an atomic is an update, as `*p += v` is). Any other function
/// handed a pointer is code the analysis does not read (`Unseen`); a test
/// scans the runtime's `memory` and `atomic` modules so that none is missed.
fn memory_access(name: &str, arguments: usize) -> Option<Direction> {
    const LOADS: &[&str] = &[
        "read",
        "read_volatile",
        "read_unaligned",
        "load",
        "load_bypass_l1",
        "load_read_only",
        "load_relaxed_gpu_global",
        "load_relaxed_gpu",
        "load_acquire_gpu",
        "load_relaxed_system",
        "load_acquire_system",
    ];
    const STORES: &[&str] = &[
        "write",
        "write_volatile",
        "write_unaligned",
        "store",
        "store_relaxed_gpu",
        "store_release_gpu",
        "store_relaxed_system",
        "store_release_system",
        "store_relaxed_system_u64",
    ];
    const ATOMICS: &[&str] = &[
        "fetch_add_u32",
        "fetch_or_u32",
        "fetch_max_u32",
        "fetch_add_u64",
        "fetch_add_f32",
        "fetch_inc_wrapping",
        "add_relaxed_gpu",
    ];
    match (name, arguments) {
        (name, 1) if LOADS.contains(&name) => Some(Direction::Load),
        (name, 2) if STORES.contains(&name) => Some(Direction::Store),
        (name, 2) if ATOMICS.contains(&name) => Some(Direction::Update),
        ("compare_and_swap_u32", 3) => Some(Direction::Update),
        _ => None,
    }
}

/// What an access of `direction` evaluates to.
fn accessed(direction: Direction) -> Value {
    match direction {
        Direction::Load => Value::opaque("a value loaded from memory"),
        Direction::Store => Value::Tuple(Vec::new()),
        Direction::Update => Value::opaque("the value an atomic found"),
    }
}

/// Token text as written: `*c.add(i)`, not `* c . add (i)`.
fn tidy(tokens: &str) -> String {
    let mut out = tokens.to_string();
    for (from, to) in [
        (" :: ", "::"),
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        (" [", "["),
        ("[ ", "["),
        (" ]", "]"),
    ] {
        out = out.replace(from, to);
    }
    // A dereference (`*` first, or after an operator) loses its space; a
    // product keeps its spaces.
    let mut tidy = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("* ") {
        let before = rest[..at].trim_end();
        let deref =
            before.is_empty() || before.ends_with(['=', '(', '[', ',', '+', '-', '*', '/', '!']);
        tidy.push_str(&rest[..at + 1]);
        if !deref {
            tidy.push(' ');
        }
        rest = &rest[at + 2..];
    }
    tidy.push_str(rest);
    tidy
}

/// What a value depends on: the CTA coordinates it reads, and whether it
/// reads memory (the paper's dependence analysis of subscripts, for the
/// addresses that are not affine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deps {
    pub block: [bool; 3],
    pub data: bool,
    /// Whether it reads the thread's index (`thread_idx_*`, `index_1d`,
    /// `index_2d`): it may differ between the lanes of a warp.
    pub thread: bool,
}

impl Deps {
    fn union(self, other: Deps) -> Deps {
        Deps {
            block: [0, 1, 2].map(|i| self.block[i] || other.block[i]),
            data: self.data || other.data,
            thread: self.thread || other.thread,
        }
    }
}

/// Every local's [`Deps`], flow-insensitively: the union over all its
/// `let`s and assignments (an over-approximation: more dependences mean
/// less sharing claimed, never more).
struct DepTable(HashMap<String, Deps>);

impl DepTable {
    fn build(body: &Block) -> Self {
        struct Bindings(Vec<(Vec<String>, Expr)>);
        impl<'ast> Visit<'ast> for Bindings {
            fn visit_local(&mut self, node: &'ast syn::Local) {
                if let Some(init) = &node.init {
                    self.0
                        .push((pattern_names(&node.pat), (*init.expr).clone()));
                }
                syn::visit::visit_local(self, node);
            }
            fn visit_expr_assign(&mut self, node: &'ast syn::ExprAssign) {
                if let Expr::Path(path) = strip(&node.left) {
                    if let Some(ident) = path.path.get_ident() {
                        self.0
                            .push((vec![ident.to_string()], (*node.right).clone()));
                    }
                }
                syn::visit::visit_expr_assign(self, node);
            }
            fn visit_expr_binary(&mut self, node: &'ast syn::ExprBinary) {
                if is_compound(node.op) {
                    if let Expr::Path(path) = strip(&node.left) {
                        if let Some(ident) = path.path.get_ident() {
                            self.0
                                .push((vec![ident.to_string()], (*node.right).clone()));
                        }
                    }
                }
                syn::visit::visit_expr_binary(self, node);
            }
            fn visit_expr_for_loop(&mut self, node: &'ast syn::ExprForLoop) {
                self.0
                    .push((pattern_names(&node.pat), (*node.expr).clone()));
                syn::visit::visit_expr_for_loop(self, node);
            }
        }
        let mut bindings = Bindings(Vec::new());
        bindings.visit_block(body);
        let mut table = DepTable(HashMap::new());
        // To a fixpoint: each pass can only add dependences.
        for _ in 0..16 {
            let mut changed = false;
            for (names, expr) in &bindings.0 {
                let deps = table.of(expr);
                for name in names {
                    let entry = table.0.entry(name.clone()).or_default();
                    let joined = entry.union(deps);
                    changed |= joined != *entry;
                    *entry = joined;
                }
            }
            if !changed {
                break;
            }
        }
        table
    }

    /// What `expr` depends on. The thread's index counts only outside the
    /// loads in it: a loaded value is data, whatever address it came from.
    fn of(&self, expr: &Expr) -> Deps {
        struct Walk<'t> {
            table: &'t DepTable,
            deps: Deps,
            /// Loads and warp-wide divisions around the expression being
            /// visited: inside one, the lane's index does not reach the value.
            lane_blind: usize,
        }
        impl Walk<'_> {
            fn thread(&mut self) {
                self.deps.thread |= self.lane_blind == 0;
            }
            fn load(&mut self, visit: impl FnOnce(&mut Self)) {
                self.deps.data = true;
                self.warp_wide(visit);
            }
            /// Visits what is read only at a warp's granularity: the value
            /// is the same for the lanes of a warp whatever they read there.
            fn warp_wide(&mut self, visit: impl FnOnce(&mut Self)) {
                self.lane_blind += 1;
                visit(self);
                self.lane_blind -= 1;
            }
        }
        impl<'ast> Visit<'ast> for Walk<'_> {
            fn visit_expr_path(&mut self, node: &'ast syn::ExprPath) {
                if let Some(ident) = node.path.get_ident() {
                    if let Some(&deps) = self.table.0.get(&ident.to_string()) {
                        let thread = deps.thread && self.lane_blind == 0;
                        self.deps = self.deps.union(Deps { thread, ..deps });
                    }
                }
            }
            fn visit_expr_call(&mut self, node: &'ast syn::ExprCall) {
                let name = match &*node.func {
                    Expr::Path(path) => path
                        .path
                        .segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                if let Some(axis) = axis_of(&name, "block_idx_") {
                    self.deps.block[axis.index()] = true;
                }
                if axis_of(&name, "thread_idx_").is_some() {
                    self.thread();
                }
                match name.as_str() {
                    "index_1d" => {
                        self.deps.block[0] = true;
                        self.thread();
                    }
                    "index_2d" => {
                        self.deps.block[0] = true;
                        self.deps.block[1] = true;
                        self.thread();
                    }
                    // A loaded value, or the one an atomic found: data.
                    _ if matches!(
                        memory_access(&name, node.args.len()),
                        Some(Direction::Load | Direction::Update)
                    ) =>
                    {
                        return self.load(|this| syn::visit::visit_expr_call(this, node));
                    }
                    _ => {}
                }
                syn::visit::visit_expr_call(self, node);
            }
            fn visit_expr_method_call(&mut self, node: &'ast syn::ExprMethodCall) {
                if node.method.to_string().starts_with("read") {
                    self.load(|this| syn::visit::visit_expr_method_call(this, node));
                } else {
                    syn::visit::visit_expr_method_call(self, node);
                }
            }
            fn visit_expr_unary(&mut self, node: &'ast syn::ExprUnary) {
                if matches!(node.op, UnOp::Deref(_)) {
                    self.load(|this| syn::visit::visit_expr_unary(this, node));
                } else {
                    syn::visit::visit_expr_unary(self, node);
                }
            }
            // `x / 32`, `x / 64`, `x >> 5`: a warp's 32 consecutive lanes
            // give one value (warps are 32 consecutive threads of the block).
            fn visit_expr_binary(&mut self, node: &'ast syn::ExprBinary) {
                let literal = match strip(&node.right) {
                    Expr::Lit(syn::ExprLit {
                        lit: Lit::Int(int), ..
                    }) => int.base10_parse::<u64>().ok(),
                    _ => None,
                };
                let per_warp = match (node.op, literal) {
                    (BinOp::Div(_), Some(d)) => d > 0 && d % 32 == 0,
                    (BinOp::Shr(_), Some(s)) => s >= 5,
                    _ => false,
                };
                if per_warp {
                    self.warp_wide(|this| this.visit_expr(&node.left));
                    self.visit_expr(&node.right);
                } else {
                    syn::visit::visit_expr_binary(self, node);
                }
            }
        }
        let mut walk = Walk {
            table: self,
            deps: Deps::default(),
            lane_blind: 0,
        };
        walk.visit_expr(expr);
        walk.deps
    }
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

/// `xs.iter().enumerate()` (or `iter_mut`, `into_iter`): an iterator whose
/// first item part is the position, from 0 in steps of 1.
fn enumerated(expr: &Expr) -> bool {
    match strip(expr) {
        Expr::MethodCall(call) if call.method == "enumerate" && call.args.is_empty() => {
            matches!(strip(&call.receiver), Expr::MethodCall(inner)
                if ["iter", "iter_mut", "into_iter"].iter().any(|m| inner.method == m))
        }
        _ => false,
    }
}

fn pattern_names(pat: &Pat) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'ast> Visit<'ast> for Names {
        fn visit_pat_ident(&mut self, node: &'ast syn::PatIdent) {
            self.0.push(node.ident.to_string());
        }
    }
    let mut names = Names(Vec::new());
    names.visit_pat(pat);
    names.0
}

/// The variables a loop body assigns (`x = ..`, `x += ..`), outside
/// nested `let`s of the same name.
fn assigned_in(body: &Block) -> Vec<String> {
    struct Assigned(Vec<String>);
    impl<'ast> Visit<'ast> for Assigned {
        fn visit_expr_assign(&mut self, node: &'ast syn::ExprAssign) {
            if let Expr::Path(path) = strip(&node.left) {
                if let Some(ident) = path.path.get_ident() {
                    let name = ident.to_string();
                    if !self.0.contains(&name) {
                        self.0.push(name);
                    }
                }
            }
            syn::visit::visit_expr_assign(self, node);
        }
        fn visit_expr_binary(&mut self, node: &'ast syn::ExprBinary) {
            let compound = matches!(
                node.op,
                BinOp::AddAssign(_)
                    | BinOp::SubAssign(_)
                    | BinOp::MulAssign(_)
                    | BinOp::DivAssign(_)
                    | BinOp::RemAssign(_)
                    | BinOp::ShlAssign(_)
                    | BinOp::ShrAssign(_)
                    | BinOp::BitAndAssign(_)
                    | BinOp::BitOrAssign(_)
                    | BinOp::BitXorAssign(_)
            );
            if compound {
                if let Expr::Path(path) = strip(&node.left) {
                    if let Some(ident) = path.path.get_ident() {
                        let name = ident.to_string();
                        if !self.0.contains(&name) {
                            self.0.push(name);
                        }
                    }
                }
            }
            syn::visit::visit_expr_binary(self, node);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    }
    let mut assigned = Assigned(Vec::new());
    assigned.visit_block(body);
    assigned.0
}

/// The step of `name` in a loop body that only ever does `name += step`
/// (or `name = name + step`), once; `None` otherwise.
fn step_of(body: &Block, name: &str) -> Option<Expr> {
    struct Steps<'n> {
        name: &'n str,
        steps: Vec<Expr>,
        other: bool,
    }
    impl<'ast> Visit<'ast> for Steps<'_> {
        fn visit_expr_binary(&mut self, node: &'ast syn::ExprBinary) {
            if let Expr::Path(path) = strip(&node.left) {
                if path.path.is_ident(self.name) {
                    match node.op {
                        BinOp::AddAssign(_) => self.steps.push((*node.right).clone()),
                        op if is_compound(op) => self.other = true,
                        _ => {}
                    }
                }
            }
            syn::visit::visit_expr_binary(self, node);
        }
        fn visit_expr_assign(&mut self, node: &'ast syn::ExprAssign) {
            if let Expr::Path(path) = strip(&node.left) {
                if path.path.is_ident(self.name) {
                    let is_self =
                        |e: &Expr| matches!(strip(e), Expr::Path(p) if p.path.is_ident(self.name));
                    match strip(&node.right) {
                        // `c = c + step`
                        Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) && is_self(&b.left) => {
                            self.steps.push((*b.right).clone())
                        }
                        // `p = p.add(step)`, a pointer stepped through memory
                        Expr::MethodCall(m)
                            if m.method == "add" && m.args.len() == 1 && is_self(&m.receiver) =>
                        {
                            self.steps.push(m.args[0].clone())
                        }
                        _ => self.other = true,
                    }
                }
            }
            syn::visit::visit_expr_assign(self, node);
        }
    }
    let mut steps = Steps {
        name,
        steps: Vec::new(),
        other: false,
    };
    steps.visit_block(body);
    match (steps.other, steps.steps.len()) {
        (false, 1) => steps.steps.pop(),
        _ => None,
    }
}

fn is_compound(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::BitXorAssign(_)
    )
}

/// The schedules `clustered_abi::access::proposals` makes of `analysis` at
/// compile time (no symbol's value known).
pub fn proposals(analysis: &Analysis) -> Vec<clustered_abi::access::Proposal> {
    use clustered_abi::access as abi;
    fn to_abi(s: &Sym) -> abi::Sym<'_> {
        match s {
            Sym::Block(a) => abi::Sym::Block(*a),
            Sym::Thread(a) => abi::Sym::Thread(*a),
            Sym::BlockDim(a) => abi::Sym::BlockDim(*a),
            Sym::GridDim(a) => abi::Sym::GridDim(*a),
            Sym::Param(p) => abi::Sym::Param(p),
            Sym::Const(p) => abi::Sym::Const(p, 0),
            Sym::Loop(l) => abi::Sym::Loop(l),
        }
    }
    let factors: Vec<Vec<Vec<abi::Sym<'_>>>> = analysis
        .accesses
        .iter()
        .map(|a| match &a.index {
            Ok(p) => p.0.keys().map(|m| m.iter().map(to_abi).collect()).collect(),
            Err(_) => Vec::new(),
        })
        .collect();
    let terms: Vec<Vec<abi::Term<'_>>> = analysis
        .accesses
        .iter()
        .zip(&factors)
        .map(|(a, factors)| match &a.index {
            Ok(p) => {
                p.0.values()
                    .zip(factors)
                    .map(|(c, f)| abi::Term {
                        coefficient: *c,
                        factors: f,
                    })
                    .collect()
            }
            Err(_) => Vec::new(),
        })
        .collect();
    let accesses: Vec<abi::Access<'_>> = analysis
        .accesses
        .iter()
        .zip(&terms)
        .map(|(a, terms)| abi::Access {
            pointer: &a.pointer,
            elem_bytes: 0,
            direction: a.direction,
            index: match &a.index {
                Ok(_) => abi::Index::Affine(terms),
                Err((why, deps)) => abi::Index::Opaque {
                    why,
                    block_axes: deps.block,
                    data: deps.data,
                },
            },
            loops: &[],
            line: 0,
            source: "",
        })
        .collect();
    let view = abi::Accesses {
        parameters: &[],
        accesses: &accesses,
        loops: &[],
        block_axes: analysis.block_axes,
        uses_shared_memory: analysis.uses_shared_memory,
        unseen: &[],
    };
    abi::proposals(&view, &abi::Unknown).collect()
}

/// The hook of `prefetch = auto`: `unsafe fn hook(next: Cta, <the kernel's
/// parameters>)` that prefetches into L2, for each load whose form is
/// affine, contains a block index and no loop counter, the address this
/// thread will load in task `next`, under the conditions the body tests on
/// the way to it (`if`s around it, early `return`s before it), evaluated for
/// `next`: a thread prefetches only what it will load, so a halo at the
/// border does not reach outside the buffers (an unguarded hook made
/// Rodinia's hotspot 37x slower: docs/DESIGN.md section 10). A load behind a
/// condition that is not a comparison of affine forms is not prefetched.
/// One prefetch per pointer and positional part (the terms in block and
/// thread indices), the first such load's: a stencil's `n`, `s`, `e`, `w`
/// differ from `c` by a halo that the neighbouring CTAs' prefetches bring.
/// Arithmetic is wrapping 64-bit (the body's may wrap in 32 bits; a prefetch
/// is a hint either way).
///
/// `Err` says why there is nothing to prefetch.
pub fn prefetch_hook(
    analysis: &Analysis,
    hook: &syn::Ident,
    names: &[syn::Ident],
    types: &[Type],
) -> Result<TokenStream, String> {
    let device = crate::runtime::runtime_path();
    let next = syn::Ident::new("__next", proc_macro2::Span::mixed_site());
    let positional = |m: &Vec<Sym>| {
        m.iter()
            .any(|s| matches!(s, Sym::Block(_) | Sym::Thread(_)))
    };
    let mut seen: Vec<(&str, Vec<&Vec<Sym>>)> = Vec::new();
    let mut prefetches = Vec::new();
    let mut guarded_out = 0;
    for found in &analysis.accesses {
        let Ok(poly) = &found.index else { continue };
        let moves = poly
            .0
            .keys()
            .any(|m| m.iter().any(|s| matches!(s, Sym::Block(_))));
        let in_loop = poly
            .0
            .keys()
            .any(|m| m.iter().any(|s| matches!(s, Sym::Loop(_))));
        if found.direction != Direction::Load || !moves || in_loop {
            continue;
        }
        let Some(guards) = found.guards.iter().cloned().collect::<Option<Vec<Cond>>>() else {
            guarded_out += 1;
            continue;
        };
        let key = (
            found.pointer.as_str(),
            poly.0.keys().filter(|m| positional(m)).collect(),
        );
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let pointer = format_ident!("{}", found.pointer);
        let address = eval_poly(poly, &next);
        let prefetch = quote! {
            #device::memory::prefetch_l2(
                #pointer.wrapping_offset(#address as isize) as *const _,
            );
        };
        prefetches.push(if guards.is_empty() {
            prefetch
        } else {
            let conds = guards.iter().map(|c| eval_cond(c, &next));
            quote!(if #(#conds)&&* { #prefetch })
        });
    }
    if prefetches.is_empty() {
        return Err(if guarded_out > 0 {
            format!("the loads that move with the CTA are behind conditions that are not comparisons of affine forms ({guarded_out} of them)")
        } else {
            "no load's address moves with the CTA outside a loop as an affine form the analysis can read".into()
        });
    }
    Ok(quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(unused_variables, unused_parens, non_snake_case, clippy::too_many_arguments, clippy::identity_op)]
        unsafe fn #hook(#next: #device::cta::Cta, #(#names: #types),*) {
            #(#prefetches)*
        }
    })
}

/// `poly` as an `i64` expression (wrapping), with the block indices and grid
/// of `next` and this thread's indices.
fn eval_poly(poly: &Poly, next: &syn::Ident) -> TokenStream {
    let device = crate::runtime::runtime_path();
    let terms = poly.0.iter().map(|(monomial, coefficient)| {
        let factors = monomial.iter().map(|sym| {
            let getter = |prefix: &str, a: &Axis| format_ident!("{}_{}", prefix, a.name());
            match sym {
                Sym::Block(a) => {
                    let get = getter("block_idx", a);
                    quote!((#next.#get() as i64))
                }
                Sym::GridDim(a) => {
                    let get = getter("grid_dim", a);
                    quote!((#next.#get() as i64))
                }
                Sym::Thread(a) => {
                    let get = getter("thread_idx", a);
                    quote!((#device::thread::#get() as i64))
                }
                Sym::BlockDim(a) => {
                    let get = getter("block_dim", a);
                    quote!((#device::thread::#get() as i64))
                }
                Sym::Param(p) => {
                    let p = format_ident!("{}", p);
                    quote!((#p as i64))
                }
                Sym::Const(path) => {
                    let path: TokenStream = path.parse().unwrap_or_default();
                    quote!(((#path) as i64))
                }
                // Never reached: `prefetch_hook` skips forms with a loop
                // counter and `cond` reads conditions with one as opaque.
                Sym::Loop(_) => quote!(0i64),
            }
        });
        let mut factors = factors.collect::<Vec<_>>().into_iter();
        let first = match (*coefficient, factors.next()) {
            (1, Some(first)) => first,
            (c, Some(first)) => quote!(#c.wrapping_mul(#first)),
            (c, None) => quote!(#c),
        };
        quote!(#first #(.wrapping_mul(#factors))*)
    });
    let mut terms = terms.collect::<Vec<_>>().into_iter();
    let first = terms.next().unwrap_or_else(|| quote!(0i64));
    quote!((#first #(.wrapping_add(#terms))*))
}

/// `cond` as a `bool` expression over [`eval_poly`]'s values.
fn eval_cond(cond: &Cond, next: &syn::Ident) -> TokenStream {
    match cond {
        Cond::Compare(l, op, r) => {
            let (l, r) = (eval_poly(l, next), eval_poly(r, next));
            let op: TokenStream = op.parse().unwrap_or_default();
            quote!((#l #op #r))
        }
        Cond::And(l, r) => {
            let (l, r) = (eval_cond(l, next), eval_cond(r, next));
            quote!((#l && #r))
        }
        Cond::Or(l, r) => {
            let (l, r) = (eval_cond(l, next), eval_cond(r, next));
            quote!((#l || #r))
        }
        Cond::Not(c) => {
            let c = eval_cond(c, next);
            quote!((!#c))
        }
    }
}

/// `analysis` as a `clustered_abi::access::Accesses<'static>` expression.
pub fn to_tokens(analysis: &Analysis, abi: &TokenStream) -> TokenStream {
    let access = quote!(#abi::access);
    let sym = |s: &Sym| -> TokenStream {
        let axis = |a: &Axis| match a {
            Axis::X => quote!(#access::Axis::X),
            Axis::Y => quote!(#access::Axis::Y),
            Axis::Z => quote!(#access::Axis::Z),
        };
        match s {
            Sym::Block(a) => {
                let a = axis(a);
                quote!(#access::Sym::Block(#a))
            }
            Sym::Thread(a) => {
                let a = axis(a);
                quote!(#access::Sym::Thread(#a))
            }
            Sym::BlockDim(a) => {
                let a = axis(a);
                quote!(#access::Sym::BlockDim(#a))
            }
            Sym::GridDim(a) => {
                let a = axis(a);
                quote!(#access::Sym::GridDim(#a))
            }
            Sym::Param(p) => quote!(#access::Sym::Param(#p)),
            Sym::Loop(l) => quote!(#access::Sym::Loop(#l)),
            Sym::Const(path) => {
                let expr: TokenStream = path.parse().unwrap_or_default();
                quote!(#access::Sym::Const(#path, (#expr) as i64))
            }
        }
    };
    let terms = |p: &Poly| -> TokenStream {
        let terms = p.0.iter().map(|(m, c)| {
            let factors = m.iter().map(sym);
            quote!(#access::Term { coefficient: #c, factors: &[#(#factors),*] })
        });
        quote!(&[#(#terms),*])
    };
    let elem_bytes = |pointer: &str| -> TokenStream {
        match analysis.pointers.iter().find(|(name, _)| name == pointer) {
            Some((_, ty)) => quote!(::core::mem::size_of::<#ty>() as u32),
            None => quote!(0),
        }
    };
    let accesses = analysis.accesses.iter().map(|found| {
        let pointer = &found.pointer;
        let direction = match found.direction {
            Direction::Load => quote!(#access::Direction::Load),
            Direction::Store => quote!(#access::Direction::Store),
            Direction::Update => quote!(#access::Direction::Update),
        };
        let index = match &found.index {
            Ok(p) => {
                let t = terms(p);
                quote!(#access::Index::Affine(#t))
            }
            Err((why, deps)) => {
                let [x, y, z] = deps.block;
                let data = deps.data;
                quote!(#access::Index::Opaque { why: #why, block_axes: [#x, #y, #z], data: #data })
            }
        };
        let loops = &found.loops;
        let line = found.line as u32;
        let source = &found.source;
        let elem = elem_bytes(pointer);
        quote! {
            #access::Access {
                pointer: #pointer,
                elem_bytes: #elem,
                direction: #direction,
                index: #index,
                loops: &[#(#loops),*],
                line: #line,
                source: #source,
            }
        }
    });
    let loops = analysis.loops.iter().map(|l| {
        let counter = &l.counter;
        let trips = match &l.trips {
            Some(p) => {
                let t = terms(p);
                quote!(Some(#t))
            }
            None => quote!(None),
        };
        let step = match &l.step {
            Some(p) => {
                let t = terms(p);
                quote!(Some(#t))
            }
            None => quote!(None),
        };
        quote!(#access::Loop { counter: #counter, trips: #trips, step: #step })
    });
    let unseen = analysis.unseen.iter().map(|u| {
        let (what, line, pointers) = (&u.what, u.line() as u32, &u.pointers);
        quote!(#access::Unseen { what: #what, line: #line, pointers: &[#(#pointers),*] })
    });
    let [x, y, z] = analysis.block_axes;
    let shared = analysis.uses_shared_memory;
    let parameters = &analysis.parameters;
    quote! {
        #access::Accesses {
            parameters: &[#(#parameters),*],
            accesses: &[#(#accesses),*],
            loops: &[#(#loops),*],
            block_axes: [#x, #y, #z],
            uses_shared_memory: #shared,
            unseen: &[#(#unseen),*],
        }
    }
}

impl std::fmt::Display for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sym::Block(a) => write!(f, "b{}", a.name()),
            Sym::Thread(a) => write!(f, "t{}", a.name()),
            Sym::BlockDim(a) => write!(f, "bd{}", a.name()),
            Sym::GridDim(a) => write!(f, "gd{}", a.name()),
            Sym::Param(p) | Sym::Const(p) | Sym::Loop(p) => f.write_str(p),
        }
    }
}

impl std::fmt::Display for Poly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("0");
        }
        for (i, (m, c)) in self.0.iter().enumerate() {
            let sign = if *c < 0 {
                "-"
            } else if i > 0 {
                "+"
            } else {
                ""
            };
            let sep = if i > 0 { " " } else { "" };
            write!(
                f,
                "{sep}{sign}{}",
                if i > 0 && !sign.is_empty() { " " } else { "" }
            )?;
            let magnitude = c.unsigned_abs();
            let mut parts: Vec<String> = m.iter().map(ToString::to_string).collect();
            if magnitude != 1 || parts.is_empty() {
                parts.insert(0, magnitude.to_string());
            }
            f.write_str(&parts.join("*"))?;
        }
        Ok(())
    }
}

/// `for k in 0..count body` for a call `unroll::<N>(count, |k| body)` of
/// the device runtime's `unroll`, which runs its closure so; `None` for any
/// other call, and for a body that `return`s (from the closure: the next
/// `k`, not the kernel's end, as it would be in the `for` loop).
fn unroll_as_for(name: &str, call: &syn::ExprCall) -> Option<Expr> {
    if name != "unroll" {
        return None;
    }
    let [count, Expr::Closure(closure)] = call.args.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    if closure.inputs.len() != 1
        || crate::clustered::analyse::returns_in(&Stmt::Expr((*closure.body).clone(), None))
    {
        return None;
    }
    let counter = match &closure.inputs[0] {
        syn::Pat::Type(typed) => (*typed.pat).clone(),
        other => other.clone(),
    };
    let body = &closure.body;
    let body: Block = match &**body {
        Expr::Block(block) => block.block.clone(),
        other => syn::parse_quote_spanned!(other.span()=> { #other; }),
    };
    Some(syn::parse_quote_spanned!(call.span()=> for #counter in 0..#count #body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms(source: &str) -> (Analysis, Vec<String>) {
        let function: ItemFn = syn::parse_str(source).unwrap();
        let analysis = analyse(&function);
        let forms = analysis
            .accesses
            .iter()
            .map(|a| {
                let index = match &a.index {
                    Ok(p) => p.to_string(),
                    Err((why, deps)) => {
                        format!("opaque: {why}{}", if deps.data { " (data)" } else { "" })
                    }
                };
                format!("{} {} [{}]", a.direction.name(), a.pointer, index)
            })
            .collect();
        (analysis, forms)
    }

    fn hook(source: &str) -> Result<String, String> {
        let function: ItemFn = syn::parse_str(source).unwrap();
        let analysis = analyse(&function);
        let names: Vec<syn::Ident> = function
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                FnArg::Typed(t) => match &*t.pat {
                    Pat::Ident(i) => Some(i.ident.clone()),
                    _ => None,
                },
                FnArg::Receiver(_) => None,
            })
            .collect();
        let types: Vec<Type> = function
            .sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                FnArg::Typed(t) => Some((*t.ty).clone()),
                FnArg::Receiver(_) => None,
            })
            .collect();
        let ident = syn::Ident::new("hook", proc_macro2::Span::call_site());
        prefetch_hook(&analysis, &ident, &names, &types).map(|t| t.to_string())
    }

    /// What the analysis did not read, and the pointers each names.
    fn unseen_of<'a>(analysis: &'a Analysis) -> Vec<(&'a str, Vec<&'a str>)> {
        let named = |u: &'a Unseen| {
            let pointers = u.pointers.iter().map(String::as_str).collect();
            (u.what.as_str(), pointers)
        };
        analysis.unseen.iter().map(named).collect()
    }

    #[test]
    fn closures_and_macros_naming_pointers_are_reported_as_not_read() {
        let (analysis, forms) = forms(
            "unsafe fn k(input: *const f32, out: *mut f32, n: u32) {
                let tile = shared_array!(t: [f32; 64]);
                let i = block_idx_x() * 64 + thread_idx_x();
                let load = |j: u32| *input.add(j as usize);
                let scale = |v: f32| v * 2.0;
                macro_rules! put { ($v:expr) => { *out.add(i as usize) = $v; } }
                debug_assert!(i < n);
                let x = load(i);
                put!(scale(x));
                *out.add(i as usize + 1) = *input.add(i as usize + 1);
            }",
        );
        // What the body itself does is read; the closure's load and the
        // macro's store are not, and are named instead.
        assert_eq!(forms.len(), 2, "{forms:?}");
        let unseen = unseen_of(&analysis);
        assert_eq!(
            unseen,
            [
                ("a closure", vec!["input"]),
                ("a macro definition", vec!["out"]),
            ],
        );
        assert_eq!(analysis.unseen[0].line(), 4);
        // `shared_array!`, `debug_assert!(i < n)`, the closure `scale` and
        // the call `put!(..)` name no pointer parameter.
        assert!(analysis.uses_shared_memory);
    }

    #[test]
    fn a_closure_over_a_local_pointer_names_the_parameter_it_points_into() {
        let (analysis, _) = forms(
            "unsafe fn k(input: *const f32, pair: (*mut f32, u32), n: u32) {
                let row = input.add((block_idx_x() * n) as usize);
                let (out, _) = pair;
                let get = |j: u32| *row.add(j as usize);
                emit! { *out = get(0); }
                emit! { *row }
            }",
        );
        let unseen = unseen_of(&analysis);
        // `row` points into `input`; a braced macro is a call, not a
        // definition. (`pair` is not a pointer parameter: nothing known.)
        assert_eq!(
            unseen,
            [
                ("a closure", vec!["input"]),
                ("a macro call `emit!`", vec!["input"]),
            ]
        );
    }

    #[test]
    fn a_macro_call_naming_a_pointer_is_reported_once_even_in_a_loop() {
        let (analysis, _) = forms(
            "unsafe fn k(src: *const f32, dst: *mut f32, n: u32) {
                let mut k = thread_idx_x();
                while k < n {
                    copy_one!(dst, src, k);
                    k += block_dim_x();
                }
            }",
        );
        assert_eq!(
            unseen_of(&analysis),
            [("a macro call `copy_one!`", vec!["dst", "src"])]
        );
    }

    #[test]
    fn guards_are_the_ifs_around_an_access_and_the_returns_before_it() {
        let (analysis, _) = forms(
            "unsafe fn k(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
                let i = index_1d();
                if i >= n { return; }
                let x = *a.add(i as usize);
                if i > 0 && !(i == n - 1) {
                    *c.add(i as usize) = x + *b.add((i - 1) as usize);
                } else {
                    *c.add(i as usize) = x;
                }
                if helper(i) { *c.add(i as usize) = 0.0; }
                for k in 0..n { if k == i { return; } }
                *c.add(i as usize) = *a.add(i as usize);
            }",
        );
        let guards: Vec<usize> = analysis.accesses.iter().map(|a| a.guards.len()).collect();
        // a: after the return; b and the first store: and the if; the
        // else's store: and its negation; the fifth store: the return and an
        // opaque call; after a loop that can return: an opaque guard more.
        assert_eq!(guards, [1, 2, 2, 2, 2, 2, 2]);
        assert_eq!(analysis.accesses[5].guards[1], None);
        let not = |c: &Option<Cond>| matches!(c, Some(Cond::Not(_)));
        assert!(not(&analysis.accesses[0].guards[0]));
        assert!(matches!(
            analysis.accesses[1].guards[1],
            Some(Cond::And(..))
        ));
        assert!(not(&analysis.accesses[3].guards[1]));
        assert_eq!(analysis.accesses[4].guards[1], None);
    }

    #[test]
    fn the_generated_hook_tests_what_the_body_tests() {
        let guarded = hook(
            "unsafe fn k(a: *const f32, c: *mut f32, n: u32) {
                let i = index_1d();
                if i < n { *c.add(i as usize) = *a.add(i as usize); }
            }",
        )
        .unwrap();
        assert!(guarded.contains("if"), "{guarded}");
        assert!(guarded.contains("prefetch_l2"), "{guarded}");
        // Behind a call the analysis cannot read: nothing is prefetched.
        let opaque = hook(
            "unsafe fn k(a: *const f32, c: *mut f32, n: u32) {
                let i = index_1d();
                if in_range(i, n) { *c.add(i as usize) = *a.add(i as usize); }
            }",
        )
        .unwrap_err();
        assert!(opaque.contains("conditions"), "{opaque}");
    }

    #[test]
    fn a_naive_sgemm_reads_rows_and_columns() {
        let (analysis, forms) = forms(
            "unsafe fn sgemm(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
                let row = block_idx_y() * TILE + thread_idx_y();
                let col = block_idx_x() * TILE + thread_idx_x();
                let mut sum = 0.0f32;
                for k in 0..n {
                    sum += *a.add(at(row, n, k)) * *b.add((k * n + col) as usize);
                }
                *c.add(at(row, n, col)) = sum;
            }",
        );
        assert_eq!(
            forms,
            [
                "load a [by*n*TILE + ty*n + k]",
                "load b [bx*TILE + tx + n*k]",
                "store c [bx*TILE + by*n*TILE + tx + ty*n]",
            ]
        );
        assert_eq!(analysis.block_axes, [true, true, false]);
        assert_eq!(analysis.accesses[0].loops, ["k"]);
        assert_eq!(analysis.loops[0].trips.as_ref().unwrap().to_string(), "n");
    }

    #[test]
    fn a_loop_run_by_unroll_is_read_as_a_for_loop() {
        let sgemm = |k_loop: &str| {
            format!(
                "unsafe fn sgemm(a: *const f32, b: *const f32, c: *mut f32, n: u32) {{
                    let row = block_idx_y() * TILE + thread_idx_y();
                    let col = block_idx_x() * TILE + thread_idx_x();
                    let mut sum = 0.0f32;
                    {k_loop}
                    *c.add(at(row, n, col)) = sum;
                }}"
            )
        };
        let step = "sum += *a.add(at(row, n, k)) * *b.add((k * n + col) as usize);";
        let (for_loop, for_forms) = forms(&sgemm(&format!("for k in 0..n {{ {step} }}")));
        let (unrolled, unrolled_forms) =
            forms(&sgemm(&format!("unroll::<8>(n, |k| {{ {step} }});")));
        assert_eq!(unrolled_forms, for_forms);
        assert!(unrolled.unseen.is_empty());
        let trips = |a: &Analysis| a.loops[0].trips.as_ref().map(ToString::to_string);
        assert_eq!(trips(&unrolled), trips(&for_loop));
        assert_eq!(trips(&unrolled).as_deref(), Some("n"));
        assert_eq!(unrolled.accesses[0].loops, ["k"]);
    }

    #[test]
    fn an_unroll_body_that_returns_is_not_read_as_a_for_loop() {
        // `return` in the closure goes on to the next k; in a `for` loop it
        // would end the kernel: the call stays code the analysis does not read.
        let (analysis, forms) = forms(
            "unsafe fn k(a: *const f32, c: *mut f32, n: u32) {
                let mut sum = 0.0f32;
                unroll::<4>(n, |k| {
                    if k == 3 { return; }
                    sum += *a.add(k as usize);
                });
                *c = sum;
            }",
        );
        assert_eq!(forms, ["store c [0]"]);
        assert_eq!(analysis.unseen.len(), 1);
        assert_eq!(analysis.unseen[0].pointers, ["a"]);
    }

    #[test]
    fn stepped_indices_and_pointers_stay_affine() {
        let (analysis, forms) = forms(
            "unsafe fn tiled(a: *const f32, c: *mut f32, n: u32) {
                let mut k0 = 0;
                let mut p = a.add(block_idx_x() as usize);
                while k0 < n {
                    let x = *a.add((k0 + thread_idx_x()) as usize) + *p;
                    p = p.add(n as usize);
                    k0 += TILE;
                }
            }",
        );
        assert_eq!(forms, ["load a [tx + TILE*while]", "load a [bx + n*while]"]);
        let lp = &analysis.loops[0];
        assert_eq!(lp.trips.as_ref().unwrap().to_string(), "n");
        assert_eq!(lp.step.as_ref().unwrap().to_string(), "TILE");
    }

    #[test]
    fn an_enumerated_position_counts_like_a_range() {
        let (_, forms) = forms(
            "unsafe fn batched(a: *const f32, c: *mut f32, n: u32) {
                let mut column = [0.0f32; 16];
                for (u, value) in column.iter_mut().enumerate() {
                    *value = *a.add(at(u as u32, n, block_idx_x()));
                }
                for (k, value) in column.iter().zip(0..16) {
                    *c.add(k as usize) = *value;
                }
            }",
        );
        assert_eq!(forms[0], "load a [bx + n*u]");
        // Other adaptors stay opaque: `zip`'s second part is not a position.
        assert!(forms[1].contains("opaque"), "{}", forms[1]);
    }

    #[test]
    fn gathers_divisions_and_updates_say_what_they_are() {
        let (_, forms) = forms(
            "unsafe fn gather(x: *const f32, col: *const u32, y: *mut f32, sum: *mut f32, n: u32) {
                let i = index_1d();
                let j = *col.add(i as usize);
                y.add((i / 2) as usize).write(*x.add(j as usize));
                *sum.add(0) += 1.0;
            }",
        );
        assert_eq!(
            forms,
            [
                "load col [bx*bdx + tx]",
                "load x [opaque: a value loaded from memory (data)]",
                "store y [opaque: a division, remainder or right shift]",
                "update sum [0]",
            ]
        );
        // The same gather through the runtime's loads and an atomic's old
        // value: data too, as `memory_access` reads them.
        let (_, runtime) = self::forms(
            "unsafe fn gather(x: *const f32, col: *const u32, slot: *mut u32, y: *mut f32) {
                let i = index_1d();
                let j = load_read_only(col.add(i as usize));
                let k = fetch_add_u32(slot, 1);
                store(y.add(i as usize), load(x.add(j as usize)) + load(x.add(k as usize)));
            }",
        );
        assert_eq!(
            runtime,
            [
                "load col [bx*bdx + tx]",
                "update slot [0]",
                "load x [opaque: a value loaded from memory (data)]",
                "load x [opaque: the value an atomic found (data)]",
                "store y [bx*bdx + tx]",
            ]
        );
    }

    /// Every function of the device runtime's `memory` and `atomic`
    /// modules that takes an address first (written out or generated by
    /// their `macro_rules!`) is one `memory_access` reads, or one this test
    /// names as no access: a load or atomic added to the runtime and not to
    /// the table would leave every kernel that uses it with an access the
    /// analysis cannot see (a warning where it should be a verdict).
    #[test]
    fn every_runtime_function_on_an_address_is_read_as_an_access() {
        use proc_macro2::{Delimiter, TokenTree};
        // Prefetches request a line and return nothing: no value flows
        // from them and no access is made that the kernel's output sees.
        const NOT_ACCESSES: &[&str] = &["prefetch_l1", "prefetch_l2"];
        /// The parameter count of a `pub unsafe fn $name` in a macro's
        /// `tokens` whose first parameter's type is a raw pointer.
        fn generated_pointer_fn(tokens: &[TokenTree]) -> Option<usize> {
            let at = tokens.windows(3).position(|w| {
                matches!(w, [TokenTree::Ident(f), TokenTree::Punct(d), TokenTree::Ident(_)]
                    if f == "fn" && d.as_char() == '$')
            })?;
            let parameters = tokens[at..].iter().find_map(|t| match t {
                TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => Some(g.stream()),
                _ => None,
            })?;
            let first = parameters.to_string();
            first.split(',').next()?.contains('*').then(|| {
                1 + parameters
                    .into_iter()
                    .filter(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                    .count()
            })
        }
        /// What one entry of a `macro_rules!` invocation names: its first
        /// identifier after the attributes (`#[doc = ...]` included).
        fn entry_names(tokens: proc_macro2::TokenStream) -> Vec<String> {
            let mut names = Vec::new();
            let mut expecting = true;
            let mut after_hash = false;
            for t in tokens {
                match &t {
                    TokenTree::Punct(p) if p.as_char() == ';' => expecting = true,
                    TokenTree::Punct(p) if p.as_char() == '#' => after_hash = true,
                    TokenTree::Group(_) if after_hash => after_hash = false,
                    TokenTree::Ident(i) if expecting => {
                        names.push(i.to_string());
                        expecting = false;
                    }
                    _ => {}
                }
            }
            names
        }
        let device = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../device/src");
        let mut found = Vec::new();
        for module in ["memory.rs", "atomic.rs"] {
            let source = std::fs::read_to_string(device.join(module)).unwrap();
            let file = syn::parse_file(&source).unwrap();
            // The `macro_rules!` that generate a function on an address,
            // by name, with that function's parameter count.
            let mut generators = std::collections::HashMap::new();
            for item in &file.items {
                match item {
                    syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                        let on_address = matches!(f.sig.inputs.first(),
                            Some(syn::FnArg::Typed(t)) if matches!(*t.ty, syn::Type::Ptr(_)));
                        if on_address {
                            found.push((f.sig.ident.to_string(), f.sig.inputs.len()));
                        }
                    }
                    syn::Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                        let tokens: Vec<_> = m.mac.tokens.clone().into_iter().collect();
                        let body = tokens.iter().filter_map(|t| match t {
                            TokenTree::Group(g) => Some(g.stream().into_iter().collect::<Vec<_>>()),
                            _ => None,
                        });
                        for body in body {
                            let mut stack = vec![body];
                            while let Some(tokens) = stack.pop() {
                                if let Some(arity) = generated_pointer_fn(&tokens) {
                                    generators.insert(m.ident.as_ref().unwrap().to_string(), arity);
                                }
                                stack.extend(tokens.iter().filter_map(|t| match t {
                                    TokenTree::Group(g) => Some(g.stream().into_iter().collect()),
                                    _ => None,
                                }));
                            }
                        }
                    }
                    _ => {}
                }
            }
            for item in &file.items {
                if let syn::Item::Macro(m) = item {
                    let Some(arity) = m
                        .mac
                        .path
                        .get_ident()
                        .and_then(|i| generators.get(&i.to_string()))
                    else {
                        continue;
                    };
                    for name in entry_names(m.mac.tokens.clone()) {
                        found.push((name, *arity));
                    }
                }
            }
        }
        // The scan itself: it saw the plain loads and the generated ones.
        for expected in [
            "load",
            "store",
            "fetch_add_u32",
            "load_acquire_system",
            "prefetch_l2",
        ] {
            assert!(
                found.iter().any(|(n, _)| n == expected),
                "the scan missed `{expected}`: {found:?}"
            );
        }
        let unread: Vec<_> = found
            .iter()
            .filter(|(name, arity)| {
                memory_access(name, *arity).is_none() && !NOT_ACCESSES.contains(&name.as_str())
            })
            .collect();
        assert!(
            unread.is_empty(),
            "device runtime functions on an address that `memory_access` does not read \
             (add each to its LOADS, STORES or ATOMICS, or to this test's NOT_ACCESSES): {unread:?}"
        );
    }
}

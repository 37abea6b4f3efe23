//! The attribute grammar of `#[clustered(...)]`, parsed into [`Schedule`].
//!
//! ```text
//! #[clustered(auto)]                   // the schedules the access analysis proposes
//! #[clustered(
//!     name = sgemm_agents,            // the new kernel's symbol (default: <fn>_clustered)
//!     binding = agents,               // reorder | redirect | agents | persistent | stride (default: agents)
//!     indexing = tile(4, 2),          // row_major | column_major | tile(W, H) | custom(path)
//!     bypass(a, b),                   // pointer parameters whose loads skip L1
//!     prefetch = path::to::hook,      // agents, persistent, stride: called with the next task's CTA
//!     prefetch = auto,                // ... or a hook the macro writes from the body's loads
//!     prefetch_distance = 2,          // stride: the hook gets the task this many ahead (default 1)
//!     chunk = 8,                      // agents: tasks claimed at a time (default 1)
//!     active = 4,                     // agents: default ACTIVE agents per SM
//!     waves = 4,                      // stride: blocks launched per resident slot (default 1)
//!     tail = claims,                  // stride: the last rounds claimed by the blocks that are free
//!     tail = blocks,                  // ... or run as blocks of one task that the hardware dispatches
//! )]
//! ```

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprCall, ExprLit, ExprPath, ExprUnary, Ident, Lit, Path, UnOp};

/// How new CTAs pick original CTAs (the paper's binding function): defined
/// once, in `clustered-abi`, for the macro, the device runtime and the host.
pub use clustered_abi::Binding;

/// Where a grid-stride loop's last rounds go (`tail = ..`): defined once, in
/// `clustered-abi`.
pub use clustered_abi::Tail;

/// The paper's indexing function: the order that clusters are cut from.
#[derive(Clone, Debug)]
pub enum Indexing {
    RowMajor,
    ColumnMajor,
    Tile {
        width: u32,
        height: u32,
    },
    /// Tiles enumerated down the grid first, CTAs column-major inside.
    ColumnTile {
        width: u32,
        height: u32,
    },
    /// Tiles with every other band walked right to left.
    Sawtooth {
        width: u32,
        height: u32,
    },
    Custom(Path),
}

/// What a persistent schedule runs before each task for the next one.
#[derive(Clone, Debug)]
pub enum Prefetch {
    /// `prefetch = path::to::hook`: the user's function.
    Hook(Path),
    /// `prefetch = auto` (or a proposal of `#[clustered(auto)]`): the macro
    /// writes the hook from the loads' affine forms (`access::prefetch_hook`).
    Generated(Span),
}

impl Prefetch {
    pub fn span(&self) -> Span {
        match self {
            Prefetch::Hook(path) => path.span(),
            Prefetch::Generated(span) => *span,
        }
    }
}

/// One `#[clustered(...)]`: one new kernel.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Where the attribute is, for errors about the whole schedule.
    pub span: Span,
    pub name: Option<Ident>,
    pub binding: Binding,
    pub indexing: Indexing,
    pub bypass: Vec<Ident>,
    pub prefetch: Option<Prefetch>,
    pub chunk: Option<(u32, Span)>,
    pub active: Option<(u32, Span)>,
    pub waves: Option<(u32, Span)>,
    pub prefetch_distance: Option<(u32, Span)>,
    /// `tail = claims` or `tail = blocks` (and where it is written).
    pub tail: Option<(Tail, Span)>,
    /// `auto`: the schedules the access analysis proposes, instead of this
    /// one.
    pub auto: bool,
}

impl Schedule {
    /// The schedule `proposal` describes (no name yet).
    pub fn proposed(proposal: &clustered_abi::access::Proposal, span: Span) -> Self {
        use clustered_abi::IndexingKind;
        let (width, height) = proposal.tile;
        Schedule {
            span,
            name: None,
            binding: proposal.binding,
            indexing: match proposal.indexing {
                IndexingKind::ColumnMajor => Indexing::ColumnMajor,
                IndexingKind::Tile => Indexing::Tile { width, height },
                IndexingKind::ColumnTile => Indexing::ColumnTile { width, height },
                IndexingKind::Sawtooth => Indexing::Sawtooth { width, height },
                IndexingKind::RowMajor | IndexingKind::Custom => Indexing::RowMajor,
            },
            bypass: Vec::new(),
            prefetch: None,
            chunk: None,
            active: None,
            waves: proposal.waves.map(|w| (w, span)),
            prefetch_distance: None,
            tail: proposal.tail.map(|tail| (tail, span)),
            auto: false,
        }
    }

    /// Whether `other` emits the same kernel under another name.
    pub fn same_as(&self, other: &Schedule) -> bool {
        let indexing = match (&self.indexing, &other.indexing) {
            (Indexing::RowMajor, Indexing::RowMajor)
            | (Indexing::ColumnMajor, Indexing::ColumnMajor) => true,
            (
                Indexing::Tile {
                    width: a,
                    height: b,
                },
                Indexing::Tile {
                    width: c,
                    height: d,
                },
            )
            | (
                Indexing::ColumnTile {
                    width: a,
                    height: b,
                },
                Indexing::ColumnTile {
                    width: c,
                    height: d,
                },
            )
            | (
                Indexing::Sawtooth {
                    width: a,
                    height: b,
                },
                Indexing::Sawtooth {
                    width: c,
                    height: d,
                },
            ) => (a, b) == (c, d),
            _ => false,
        };
        let value = |o: &Option<(u32, Span)>| o.map(|(v, _)| v);
        indexing
            && self.binding == other.binding
            && self.bypass.is_empty()
            && other.bypass.is_empty()
            && matches!(
                (&self.prefetch, &other.prefetch),
                (None, None) | (Some(Prefetch::Generated(_)), Some(Prefetch::Generated(_)))
            )
            && value(&self.chunk) == value(&other.chunk)
            && value(&self.active) == value(&other.active)
            && value(&self.waves) == value(&other.waves)
            && value(&self.prefetch_distance) == value(&other.prefetch_distance)
            && self.tail.map(|(t, _)| t) == other.tail.map(|(t, _)| t)
    }
}

const OPTIONS: &str =
    "`auto`, `name`, `binding`, `indexing`, `bypass(..)`, `prefetch`, `prefetch_distance`, `chunk`, `active`, `waves`, `tail`";

/// Parses one attribute's arguments, pushing every mistake into `errors`.
pub fn parse_schedule(args: TokenStream, span: Span, errors: &mut Vec<Error>) -> Schedule {
    let mut schedule = Schedule {
        span,
        name: None,
        binding: Binding::Agents,
        indexing: Indexing::RowMajor,
        bypass: Vec::new(),
        prefetch: None,
        chunk: None,
        active: None,
        waves: None,
        prefetch_distance: None,
        tail: None,
        auto: false,
    };
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        if seen.contains(&key) {
            errors.push(Error::new(
                meta.path.span(),
                format!("`{key}` is given twice; keep one"),
            ));
            // The first one counts: checking this one too would report
            // mistakes that come only from the repetition.
            return skip_value(&meta);
        } else if !key.is_empty() {
            seen.push(key.clone());
        }
        match key.as_str() {
            "auto" => {
                if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                    errors.push(Error::new(
                        meta.path.span(),
                        "`auto` takes no value: `#[clustered(auto)]`",
                    ));
                    return skip_value(&meta);
                }
                schedule.auto = true;
            }
            "name" => {
                // Parse any expression, so that a wrong one is skipped and
                // the options after it are still read.
                let value: Expr = meta.value()?.parse()?;
                match &value {
                    Expr::Path(ExprPath {
                        path, qself: None, ..
                    }) if path.get_ident().is_some() => {
                        schedule.name = path.get_ident().cloned();
                    }
                    _ => errors.push(Error::new_spanned(
                        &value,
                        "`name` takes the new kernel's name: `name = my_kernel_agents`",
                    )),
                }
            }
            "binding" => {
                let value: Expr = meta.value()?.parse()?;
                let name = expr_ident(&value);
                match name.as_deref().and_then(Binding::from_name) {
                    Some(binding) => schedule.binding = binding,
                    None => errors.push(Error::new_spanned(
                        &value,
                        "unknown binding: use `reorder` (same grid, new order), `redirect` (the paper's round-robin redirection), `agents` (persistent agents bound to SMs), `persistent` (persistent CTAs claiming in order from one queue) or `stride` (persistent CTAs in a grid-stride loop)",
                    )),
                }
            }
            "indexing" => {
                let value: Expr = meta.value()?.parse()?;
                if let Some(indexing) = parse_indexing(&value, errors) {
                    schedule.indexing = indexing;
                }
            }
            "bypass" => {
                if meta.input.peek(syn::Token![=]) {
                    errors.push(Error::new(
                        meta.path.span(),
                        "write `bypass(a, b)`: a list of pointer parameters whose loads skip L1",
                    ));
                    let _: Expr = meta.value()?.parse()?;
                } else {
                    meta.parse_nested_meta(|inner| {
                        match inner.path.get_ident() {
                            Some(ident) => schedule.bypass.push(ident.clone()),
                            None => errors.push(Error::new(
                                inner.path.span(),
                                "`bypass` lists parameter names",
                            )),
                        }
                        Ok(())
                    })?;
                }
            }
            "prefetch" => {
                let value: Expr = meta.value()?.parse()?;
                match value {
                    Expr::Path(ExprPath { path, qself: None, .. }) if path.is_ident("auto") => {
                        schedule.prefetch = Some(Prefetch::Generated(path.span()));
                    }
                    Expr::Path(ExprPath { path, qself: None, .. }) => {
                        schedule.prefetch = Some(Prefetch::Hook(path));
                    }
                    other => errors.push(Error::new_spanned(
                        other,
                        "`prefetch` takes `auto` or the path of a function `unsafe fn(next: Cta, <the kernel's parameters>)`, e.g. `prefetch = prefetch_rows`",
                    )),
                }
            }
            "tail" => {
                let value: Expr = meta.value()?.parse()?;
                match expr_ident(&value).as_deref().and_then(Tail::from_name) {
                    Some(tail) => schedule.tail = Some((tail, value.span())),
                    None => errors.push(Error::new_spanned(
                        &value,
                        "`tail` takes `claims` or `blocks`: `tail = claims` has a grid-stride loop's free blocks claim its last rounds, `tail = blocks` runs them as blocks of one task that the hardware dispatches (without it, each block runs its own share to the end)",
                    )),
                }
            }
            "chunk" | "active" | "waves" | "prefetch_distance" => {
                let value: Expr = meta.value()?.parse()?;
                match positive_int(&value) {
                    Ok(n) => {
                        let slot = match key.as_str() {
                            "chunk" => &mut schedule.chunk,
                            "active" => &mut schedule.active,
                            "waves" => &mut schedule.waves,
                            _ => &mut schedule.prefetch_distance,
                        };
                        *slot = Some((n, value.span()));
                    }
                    Err(message) => {
                        errors.push(Error::new_spanned(&value, format!("`{key}` {message}")))
                    }
                }
            }
            _ => {
                errors.push(Error::new(
                    meta.path.span(),
                    format!("unknown option of #[clustered]; the options are {OPTIONS}"),
                ));
                return skip_value(&meta);
            }
        }
        Ok(())
    });
    if let Err(error) = parser.parse2(args) {
        errors.push(error);
    }
    if schedule.auto && seen.len() > 1 {
        errors.push(Error::new(
            span,
            "`auto` stands alone: it adds the schedules that the access analysis proposes, named `<kernel>_auto_<tag>`; write any other schedule in a `#[clustered(..)]` of its own",
        ));
    }
    schedule
}

/// Skips an option's value, `= expr` or `(..)`, so that the options after it
/// are still read.
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: Expr = meta.value()?.parse()?;
    } else if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
        // One token tree: the `(..)` of `option(..)`, not the rest of the
        // attribute.
        let _: proc_macro2::TokenTree = meta.input.parse()?;
    }
    Ok(())
}

fn expr_ident(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(ExprPath {
            path, qself: None, ..
        }) => path.get_ident().map(Ident::to_string),
        _ => None,
    }
}

fn parse_indexing(value: &Expr, errors: &mut Vec<Error>) -> Option<Indexing> {
    const HELP: &str =
        "use `row_major`, `column_major`, `tile(width, height)`, `column_tile(width, height)`, `sawtooth(width, height)` or `custom(path::to::function)`";
    // The name and, for the call form, the arguments; `named` is what an
    // "unknown" error points at.
    let (name, args, named) = match value {
        Expr::Call(ExprCall { func, args, .. }) => (expr_ident(func), Some(args), &**func),
        _ => (expr_ident(value), None, value),
    };
    match (name.as_deref(), args) {
        (Some("row_major"), None) => Some(Indexing::RowMajor),
        (Some("column_major"), None) => Some(Indexing::ColumnMajor),
        (Some(name @ ("tile" | "column_tile" | "sawtooth" | "custom")), None) => {
            errors.push(Error::new_spanned(
                value,
                format!("`{name}` needs arguments: {HELP}"),
            ));
            None
        }
        (Some(kind @ ("tile" | "column_tile" | "sawtooth")), Some(args)) => {
            if args.len() != 2 {
                errors.push(Error::new_spanned(
                    value,
                    format!("`{kind}` takes the tile's width and height in CTAs: `{kind}(4, 2)`"),
                ));
                return None;
            }
            let mut sides = [0u32; 2];
            let mut ok = true;
            for (side, arg) in sides.iter_mut().zip(args) {
                match positive_int(arg) {
                    Ok(n) => *side = n,
                    Err(message) => {
                        errors.push(Error::new_spanned(arg, format!("a tile side {message}")));
                        ok = false;
                    }
                }
            }
            let [width, height] = sides;
            ok.then_some(match kind {
                "tile" => Indexing::Tile { width, height },
                "column_tile" => Indexing::ColumnTile { width, height },
                _ => Indexing::Sawtooth { width, height },
            })
        }
        (Some("custom"), Some(args)) => match args.first() {
            Some(Expr::Path(ExprPath {
                path, qself: None, ..
            })) if args.len() == 1 => Some(Indexing::Custom(path.clone())),
            _ => {
                errors.push(Error::new_spanned(
                    value,
                    "`custom` takes the path of a bijection `fn(linear_id: u32, grid: [u32; 3]) -> [u32; 3]`: `custom(my_order)`",
                ));
                None
            }
        },
        _ => {
            errors.push(Error::new_spanned(
                named,
                format!("unknown indexing: {HELP}"),
            ));
            None
        }
    }
}

/// A literal integer >= 1 that fits in `u32`.
fn positive_int(expr: &Expr) -> Result<u32, &'static str> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => match int.base10_parse::<u32>() {
            Ok(0) => Err("must be at least 1"),
            Ok(n) => Ok(n),
            Err(_) => Err("must be an integer literal that fits in u32"),
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => Err("must be at least 1, not negative"),
        _ => Err("must be an integer literal, e.g. `4`"),
    }
}

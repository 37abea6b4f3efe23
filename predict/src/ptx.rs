//! PTX text to functions, basic blocks and classified instructions.
//!
//! Only what the model needs: each `.entry` and `.func` with its parameters,
//! its body cut into basic blocks (a label starts one, a branch ends one),
//! and each instruction's opcode, guard predicate, operands and
//! [`Class`]. Directives (`.reg`, `.pragma`, ...) and comments are skipped.

use std::fmt;

/// What an instruction occupies on the SM: the pipe that executes it, or the
/// memory path it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// FP32 add, multiply, FMA, compare, min/max (the FMA pipes).
    Fp32,
    /// FP64 arithmetic.
    Fp64,
    /// Integer and logic (add, shift, compare, select, IMAD) and moves.
    Int,
    /// Conversions between types and widths (`cvt`), 16 per SM per clock.
    Convert,
    /// Special functions (`ex2`, `lg2`, `sin`, `rsqrt`, `rcp.approx`...).
    Sfu,
    /// IEEE division, square root and reciprocal, and integer division or
    /// remainder: ptxas expands each into a short sequence (its rate and
    /// latency, the `expanded` entry of [`crate::device::DeviceModel::classes`],
    /// are those of the whole sequence).
    Expanded,
    /// Loads from global memory (any cache operator).
    LoadGlobal,
    /// Stores to global memory.
    StoreGlobal,
    /// Loads from shared memory.
    LoadShared,
    /// Stores to shared memory.
    StoreShared,
    /// Local memory (spills, stack arrays): through L1 like global.
    Local,
    /// Kernel parameters and constants (the constant cache).
    Param,
    /// Atomics and reductions on global or shared memory.
    Atomic,
    /// Barriers (`bar.sync`, `barrier`).
    Barrier,
    /// Memory fences (`fence`, `membar`): the warp waits until its earlier
    /// writes are performed at the fence's scope, an L2 round trip or two
    /// at GPU scope, where a barrier takes tens of cycles.
    Fence,
    /// Branches, calls, returns, exits.
    Branch,
    /// Warp shuffles and votes.
    Warp,
    /// Prefetches into L2 (no register result).
    Prefetch,
    /// Anything else (address-space conversions, `trap`...).
    Other,
}

impl Class {
    /// Every class, in display order.
    pub const ALL: [Class; 19] = [
        Class::Fp32,
        Class::Fp64,
        Class::Int,
        Class::Convert,
        Class::Sfu,
        Class::Expanded,
        Class::LoadGlobal,
        Class::StoreGlobal,
        Class::LoadShared,
        Class::StoreShared,
        Class::Local,
        Class::Param,
        Class::Atomic,
        Class::Barrier,
        Class::Fence,
        Class::Branch,
        Class::Warp,
        Class::Prefetch,
        Class::Other,
    ];

    /// Its position in [`Class::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// A short name for tables and the device file's keys.
    pub fn name(self) -> &'static str {
        match self {
            Class::Fp32 => "fp32",
            Class::Fp64 => "fp64",
            Class::Int => "int",
            Class::Convert => "cvt",
            Class::Sfu => "sfu",
            Class::Expanded => "expanded",
            Class::LoadGlobal => "ld.global",
            Class::StoreGlobal => "st.global",
            Class::LoadShared => "ld.shared",
            Class::StoreShared => "st.shared",
            Class::Local => "local",
            Class::Param => "param",
            Class::Atomic => "atom",
            Class::Barrier => "bar",
            Class::Fence => "fence",
            Class::Branch => "branch",
            Class::Warp => "warp",
            Class::Prefetch => "prefetch",
            Class::Other => "other",
        }
    }

    /// The class of an opcode (`ld.global.nc.v4.f32`, `fma.rn.f32`, ...).
    pub fn of(opcode: &str) -> Class {
        let mut parts = opcode.split('.');
        let op = parts.next().unwrap_or("");
        let has = |suffix: &str| opcode.split('.').any(|p| p == suffix);
        // `shared::cta` and `shared::cluster` (another block's shared
        // memory in the cluster, DSMEM) are shared memory too; a remote
        // access's longer latency is not modelled.
        let shared = opcode
            .split('.')
            .any(|p| p == "shared" || p.starts_with("shared::"));
        let float = |width: &str| opcode.ends_with(width) || has(width);
        match op {
            "ld" | "ldu" => {
                if has("global") {
                    Class::LoadGlobal
                } else if shared {
                    Class::LoadShared
                } else if has("local") {
                    Class::Local
                } else if has("param") || has("const") {
                    Class::Param
                } else {
                    // Generic: the slow path, resolved at run time; global
                    // is the common case.
                    Class::LoadGlobal
                }
            }
            "st" => {
                if shared {
                    Class::StoreShared
                } else if has("local") {
                    Class::Local
                } else if has("param") {
                    Class::Param
                } else {
                    Class::StoreGlobal
                }
            }
            "atom" | "red" => Class::Atomic,
            // A cluster barrier's arrive releases (unless `.relaxed`):
            // ptxas lowers it to `MEMBAR.ALL.GPU` before the arrival
            // (`clustered_device::cluster::cluster_sync`), so it costs a
            // GPU-scope fence; the wait is a barrier.
            "barrier" if has("cluster") && has("arrive") && !has("relaxed") => Class::Fence,
            "bar" | "barrier" => Class::Barrier,
            "membar" | "fence" => Class::Fence,
            "bra" | "brx" | "call" | "ret" | "exit" => Class::Branch,
            "shfl" | "vote" | "match" | "activemask" => Class::Warp,
            "prefetch" | "prefetchu" | "cp" => Class::Prefetch,
            "cvt" => Class::Convert,
            "ex2" | "lg2" | "sin" | "cos" | "tanh" => Class::Sfu,
            "rsqrt" | "rcp" | "sqrt" | "div" if has("approx") => Class::Sfu,
            "rcp" | "sqrt" | "div" | "rem" => Class::Expanded,
            _ if float("f64") => Class::Fp64,
            _ if float("f32") || float("f16") || float("f16x2") => Class::Fp32,
            "add" | "sub" | "mul" | "mad" | "fma" | "shl" | "shr" | "shf" | "and" | "or"
            | "xor" | "not" | "neg" | "abs" | "min" | "max" | "setp" | "selp" | "set" | "mov"
            | "prmt" | "bfe" | "bfi" | "popc" | "clz" | "brev" | "cnot" | "slct" | "testp" => {
                Class::Int
            }
            _ => Class::Other,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// `Some((register, negated))` for `@%p` / `@!%p`.
    pub guard: Option<(String, bool)>,
    /// The full opcode with its modifiers (`setp.lt.u32`).
    pub opcode: String,
    /// Operands as written, split at top-level commas.
    pub operands: Vec<String>,
    /// Its class.
    pub class: Class,
}

impl Instruction {
    /// The opcode's first part (`setp` of `setp.lt.u32`).
    pub fn op(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// Whether the opcode has modifier `part` (`lt` in `setp.lt.u32`).
    pub fn has(&self, part: &str) -> bool {
        self.opcode.split('.').skip(1).any(|p| p == part)
    }

    /// The register it writes, for instructions whose first operand is a
    /// destination.
    pub fn destination(&self) -> Option<&str> {
        match self.op() {
            "st" | "bra" | "brx" | "bar" | "barrier" | "ret" | "exit" | "red" | "prefetch"
            | "prefetchu" | "membar" | "fence" | "trap" | "call" | "cp" => None,
            _ => self
                .operands
                .first()
                .map(String::as_str)
                .filter(|o| o.starts_with('%')),
        }
    }

    /// The branch target label of a `bra`.
    pub fn branch_target(&self) -> Option<&str> {
        (self.op() == "bra").then(|| self.operands.first().map(String::as_str))?
    }

    /// The function a `call` calls.
    pub fn callee(&self) -> Option<&str> {
        if self.op() != "call" {
            return None;
        }
        // call.uni (retval0), name, (param0); or call.uni name, (param0);
        self.operands
            .iter()
            .map(|o| o.trim())
            .find(|o| !o.starts_with('('))
    }
}

/// A basic block: instructions entered at the first, left at the last.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// Its label (`$L__BB107_4`), if it has one.
    pub label: Option<String>,
    pub instructions: Vec<Instruction>,
}

/// A parameter of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    /// Its type as declared (`.u32`, `.u64`, `.b8` for byte arrays).
    pub ty: String,
    /// Bytes for byte arrays (`.b8 name[184]`).
    pub array_bytes: Option<u32>,
}

/// An `.entry` (kernel) or `.func` (device function).
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub is_entry: bool,
    pub params: Vec<Param>,
    pub blocks: Vec<Block>,
}

impl Function {
    /// The index of the block labelled `label`.
    pub fn block_of_label(&self, label: &str) -> Option<usize> {
        self.blocks
            .iter()
            .position(|b| b.label.as_deref() == Some(label))
    }

    /// Instructions in the body (static count).
    pub fn instruction_count(&self) -> usize {
        self.blocks.iter().map(|b| b.instructions.len()).sum()
    }
}

/// A parsed PTX module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    pub functions: Vec<Function>,
}

/// Why PTX could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtxError {
    /// A function's body never closed.
    Unterminated { function: String },
    /// A function header without a name.
    NoName { line: usize },
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PtxError::Unterminated { function } => write!(
                f,
                "the body of `{function}` never closes: is the PTX truncated? (pass the whole module)"
            ),
            PtxError::NoName { line } => {
                write!(f, "line {line}: a .entry or .func without a name")
            }
        }
    }
}

impl std::error::Error for PtxError {}

impl Module {
    /// Parses a module's text.
    pub fn parse(text: &str) -> Result<Module, PtxError> {
        let mut functions = Vec::new();
        let mut lines = text.lines().enumerate().peekable();
        while let Some((number, raw)) = lines.next() {
            let line = strip_comment(raw).trim();
            let is_entry = line.contains(".entry ");
            let is_func = line.starts_with(".func") || line.contains(" .func ");
            // A prototype or extern declaration ends with `;`: no body.
            if !(is_entry || is_func) || line.ends_with(';') {
                continue;
            }
            let keyword = if is_entry { ".entry" } else { ".func" };
            let name = function_name(line, keyword).ok_or(PtxError::NoName { line: number + 1 })?;
            // Parameters up to the `{` that opens the body.
            let mut params = Vec::new();
            let mut header = line.to_string();
            while !header.trim_end().ends_with('{') {
                if let Some(param) = parse_param(&header, &name) {
                    params.push(param);
                }
                match lines.next() {
                    Some((_, next)) => header = strip_comment(next).trim().to_string(),
                    None => return Err(PtxError::Unterminated { function: name }),
                }
                if header == "{" {
                    break;
                }
            }
            let blocks = parse_body(&mut lines).ok_or(PtxError::Unterminated {
                function: name.clone(),
            })?;
            functions.push(Function {
                name,
                is_entry,
                params,
                blocks,
            });
        }
        Ok(Module { functions })
    }

    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The kernels' names.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.functions
            .iter()
            .filter(|f| f.is_entry)
            .map(|f| f.name.as_str())
    }
}

fn strip_comment(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

fn function_name(line: &str, keyword: &str) -> Option<String> {
    let mut rest = line.split(keyword).nth(1)?.trim_start();
    // `.func (.param .b32 func_retval0) name(`
    if rest.starts_with('(') {
        rest = rest.split_once(')')?.1.trim_start();
    }
    let name: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '(')
        .collect();
    (!name.is_empty()).then_some(name)
}

fn parse_param(line: &str, function: &str) -> Option<Param> {
    let text = line.split(".param").nth(1)?;
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ')')
        .filter(|w| !w.is_empty())
        .collect();
    let name_word = words
        .iter()
        .find(|w| w.starts_with(function) && w.contains("_param_"))?;
    let (name, array_bytes) = match name_word.split_once('[') {
        Some((name, rest)) => (name, rest.trim_end_matches(']').parse().ok()),
        None => (*name_word, None),
    };
    let ty = words
        .iter()
        .find(|w| {
            w.starts_with('.')
                && !matches!(**w, ".ptr" | ".align" | ".global" | ".shared" | ".const")
        })
        .map_or(String::new(), |w| w.to_string());
    Some(Param {
        name: name.to_string(),
        ty,
        array_bytes,
    })
}

/// The body after its opening `{`, up to the matching `}`.
fn parse_body<'a>(
    lines: &mut std::iter::Peekable<impl Iterator<Item = (usize, &'a str)>>,
) -> Option<Vec<Block>> {
    let mut blocks = vec![Block::default()];
    let mut depth = 1u32;
    let mut pending = String::new();
    for (_, raw) in lines.by_ref() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if line == "{" {
            depth += 1;
            continue;
        }
        if line == "}" {
            depth -= 1;
            if depth == 0 {
                blocks.retain(|b| b.label.is_some() || !b.instructions.is_empty());
                return Some(blocks);
            }
            continue;
        }
        if let Some(label) = line.strip_suffix(':') {
            if !label.contains(' ') {
                blocks.push(Block {
                    label: Some(label.to_string()),
                    instructions: Vec::new(),
                });
                continue;
            }
        }
        if line.starts_with('.') {
            continue; // .reg, .pragma, .local, .shared declarations
        }
        pending.push_str(line);
        pending.push(' ');
        // One statement may span lines; `;` ends it.
        while let Some(end) = pending.find(';') {
            let statement: String = pending[..end].trim().to_string();
            pending = pending[end + 1..].to_string();
            if statement.is_empty() || statement.starts_with('.') {
                continue;
            }
            let instruction = parse_instruction(&statement);
            let ends_block = matches!(instruction.op(), "bra" | "brx" | "ret" | "exit" | "trap");
            blocks.last_mut()?.instructions.push(instruction);
            if ends_block {
                blocks.push(Block::default());
            }
        }
    }
    None
}

fn parse_instruction(statement: &str) -> Instruction {
    let mut rest = statement.trim();
    let mut guard = None;
    if let Some(after) = rest.strip_prefix('@') {
        let (predicate, tail) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
        let (name, negated) = match predicate.strip_prefix('!') {
            Some(name) => (name, true),
            None => (predicate, false),
        };
        guard = Some((name.to_string(), negated));
        rest = tail.trim_start();
    }
    let (opcode, operands) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    Instruction {
        guard,
        class: Class::of(opcode),
        opcode: opcode.to_string(),
        operands: split_operands(operands),
    }
}

/// Splits at commas outside braces, brackets and parentheses.
fn split_operands(text: &str) -> Vec<String> {
    let mut operands = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                operands.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        operands.push(current.trim().to_string());
    }
    operands
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOP: &str = r#"
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u32 k_param_1,
	.param .align 8 .b8 k_param_2[184]
)
{
	.reg .pred 	%p<3>;
// %bb.0:
	ld.param.b32 	%r1, [k_param_1];
	mov.b32 	%r2, 0;
$L__BB0_1:                  // =>This Inner Loop Header
	ld.global.nc.f32 	%f1, [%rd1];
	// begin inline asm
	fma.rn.f32 %f2, %f1, %f1, %f2;
	// end inline asm
	add.s32 	%r2, %r2, 1;
	setp.lt.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB0_1;
// %bb.2:
	st.global.f32 	[%rd1], %f2;
	ret;
}
"#;

    #[test]
    fn parses_blocks_params_and_classes() {
        let module = Module::parse(LOOP).unwrap();
        let k = module.function("k").unwrap();
        assert!(k.is_entry);
        assert_eq!(k.params.len(), 3);
        assert_eq!(k.params[1].name, "k_param_1");
        assert_eq!(k.params[1].ty, ".u32");
        assert_eq!(k.params[2].array_bytes, Some(184));
        // entry block, loop block, exit block (the empty block after `ret` dropped)
        assert_eq!(k.blocks.len(), 3, "{:?}", k.blocks);
        assert_eq!(k.blocks[1].label.as_deref(), Some("$L__BB0_1"));
        let classes: Vec<Class> = k.blocks[1].instructions.iter().map(|i| i.class).collect();
        assert_eq!(
            classes,
            [
                Class::LoadGlobal,
                Class::Fp32,
                Class::Int,
                Class::Int,
                Class::Branch
            ]
        );
        let branch = k.blocks[1].instructions.last().unwrap();
        assert_eq!(branch.guard, Some(("%p1".to_string(), false)));
        assert_eq!(branch.branch_target(), Some("$L__BB0_1"));
    }

    #[test]
    fn classifies_opcodes() {
        for (opcode, class) in [
            ("ld.global.nc.v4.f32", Class::LoadGlobal),
            ("ld.shared.u32", Class::LoadShared),
            ("ld.param.b64", Class::Param),
            ("st.shared.f32", Class::StoreShared),
            ("st.shared::cluster.f32", Class::StoreShared),
            ("ld.shared::cta.u32", Class::LoadShared),
            ("atom.relaxed.gpu.global.inc.u32", Class::Atomic),
            ("div.rn.f32", Class::Expanded),
            ("div.approx.ftz.f32", Class::Sfu),
            ("rem.u32", Class::Expanded),
            ("ex2.approx.ftz.f32", Class::Sfu),
            ("mul.rn.f64", Class::Fp64),
            ("setp.gt.f32", Class::Fp32),
            ("setp.lt.u32", Class::Int),
            ("cvt.rn.f32.s32", Class::Convert),
            ("bar.sync", Class::Barrier),
            ("barrier.sync.aligned", Class::Barrier),
            ("barrier.cluster.arrive", Class::Fence),
            ("barrier.cluster.arrive.release.aligned", Class::Fence),
            ("barrier.cluster.arrive.relaxed", Class::Barrier),
            ("barrier.cluster.wait", Class::Barrier),
            ("fence.acq_rel.gpu", Class::Fence),
            ("membar.gl", Class::Fence),
            ("prefetch.global.L2", Class::Prefetch),
            ("call.uni", Class::Branch),
        ] {
            assert_eq!(Class::of(opcode), class, "{opcode}");
        }
    }

    #[test]
    fn unterminated_body_is_an_error() {
        let cut = &LOOP[..LOOP.find("st.global").unwrap()];
        assert_eq!(
            Module::parse(cut),
            Err(PtxError::Unterminated {
                function: "k".to_string()
            })
        );
    }
}

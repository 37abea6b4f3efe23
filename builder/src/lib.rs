//! Builds a kernels crate to PTX from a build script: one line in the
//! `build.rs` of the crate that launches the kernels.
//!
//! ```no_run
//! // build.rs
//! # #[allow(clippy::needless_doctest_main)]
//! fn main() {
//!     clustered_builder::build("kernels");
//! }
//! ```
//!
//! and in that crate, `const PTX: &str = clustered::include_ptx!("kernels");`
//! (the kernels crate's package name). [`Builder`] takes options (`arch`,
//! `debug`) and returns errors instead of failing the build.
//!
//! The kernels crate needs nothing for the GPU in its manifest or source:
//! the builder asks for the `cdylib` that becomes the PTX module, sets the
//! profile (`panic = "abort"`, one codegen unit) with `--config`, and injects
//! `#![no_std]` and `#![feature(abi_ptx)]` into the nvptx64 build only
//! (`-Zcrate-attr`), so the same crate stays an ordinary `std` crate on the
//! host, where the CPU backend runs its kernels. What cargo itself requires:
//! a kernels crate inside a workspace's directory is one of its `members`.
//!
//! Like Rust-CUDA's `cuda_builder`, it runs a nested cargo:
//! `cargo rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core -- -C target-cpu=<arch>`,
//! with `RUSTC_BOOTSTRAP=1` for that build alone (the NVPTX target needs
//! unstable features; the outer build stays stable), in its own target
//! directory under `OUT_DIR`, and with `rerun-if-changed` on every source the nested
//! build read (from its dep-info file). Missing rustup components
//! ([`REQUIRED_COMPONENTS`]) are installed with `rustup component add` for the
//! active toolchain where rustup is present; otherwise the build stops with
//! the command to run.

#![warn(missing_docs)]

use std::env;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The rustup components the NVPTX build needs.
pub const REQUIRED_COMPONENTS: &str = "rust-src llvm-bitcode-linker llvm-tools";

pub mod bounds;
pub mod ptx_check;

const TARGET: &str = "nvptx64-nvidia-cuda";

/// The profile settings of every PTX build: no unwinding on the GPU, and one
/// codegen unit so that LLVM sees (and inlines across) the whole crate.
const PROFILE: [&str; 2] = ["panic=\"abort\"", "codegen-units=1"];

/// Why the PTX could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The kernels crate has no `Cargo.toml` at the given path.
    NoKernelCrate(PathBuf),
    /// A rustup component is missing from the toolchain, and could not be
    /// installed (no rustup, or `rustup component add` failed).
    MissingComponent {
        /// The component, e.g. `rust-src`.
        component: &'static str,
        /// The file whose absence showed it missing.
        looked_for: PathBuf,
        /// The toolchain it is missing from, when rustup names one.
        toolchain: Option<String>,
    },
    /// `cargo` or `rustc` could not be run.
    Tool {
        /// The program.
        tool: String,
        /// Why it could not be started.
        error: std::io::Error,
    },
    /// The nested cargo failed; its output was forwarded above.
    Compile {
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// The build succeeded but left no PTX where expected.
    NoPtx(PathBuf),
    /// An environment variable that cargo sets for build scripts is missing.
    NotInBuildScript(&'static str),
    /// The PTX has clustered kernels that would compute wrong results
    /// ([`ptx_check`]): each problem names the kernel and the fix.
    Check(Vec<ptx_check::Problem>),
    /// The PTX declares a module-scope `.shared` symbol twice: the driver
    /// would refuse the module only when it loads on the GPU.
    DuplicateShared {
        /// The symbol declared twice.
        symbol: String,
        /// The PTX file.
        ptx: PathBuf,
    },
    /// The PTX declares a `constant_table!` name twice: tables are found by
    /// name, so each needs its own.
    DuplicateConstant {
        /// The name declared twice.
        symbol: String,
        /// The PTX file.
        ptx: PathBuf,
    },
    /// The module's constant tables together are larger than the 64 KiB of
    /// constant memory a module has: the driver would refuse to load it.
    ConstantMemory {
        /// Bytes of every `.const` table together.
        bytes: u64,
        /// The PTX file.
        ptx: PathBuf,
    },
    /// A kernel's launch bounds (`#[launch_bounds]`) could not be written
    /// into its PTX entry.
    LaunchBounds(String),
    /// The PTX with the launch bounds written in could not be saved.
    WritePtx {
        /// The file.
        ptx: PathBuf,
        /// Why it could not be written.
        error: std::io::Error,
    },
    /// The PTX could not be read back for the checks above.
    ReadPtx {
        /// The PTX file.
        ptx: PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NoKernelCrate(path) => write!(
                f,
                "no kernels crate at {}: give Builder::new the directory that holds its Cargo.toml",
                path.display()
            ),
            BuildError::MissingComponent {
                component,
                looked_for,
                toolchain,
            } => {
                let toolchain = toolchain
                    .as_deref()
                    .map(|t| format!(" --toolchain {t}"))
                    .unwrap_or_default();
                write!(
                    f,
                    "the rustup component `{component}` is missing (looked for {}); \
                     install what the NVPTX build needs with \
                     `rustup component add {REQUIRED_COMPONENTS}{toolchain}`",
                    looked_for.display()
                )
            }
            BuildError::Tool { tool, error } => write!(f, "could not run `{tool}`: {error}"),
            BuildError::Compile { status } => write!(
                f,
                "building the kernels for {TARGET} failed ({status}); the compiler's messages are above"
            ),
            BuildError::NoPtx(path) => write!(f, "the kernel build wrote no PTX at {}", path.display()),
            BuildError::NotInBuildScript(var) => {
                write!(f, "${var} is not set: call the builder from a build script (build.rs)")
            }
            BuildError::Check(problems) => {
                write!(f, "{} problem(s) in the clustered kernels:", problems.len())?;
                for problem in problems {
                    write!(f, "\n- {problem}")?;
                }
                Ok(())
            }
            BuildError::DuplicateShared { symbol, ptx } => write!(
                f,
                "the PTX ({}) declares the shared array `{symbol}` twice, which the GPU refuses \
                 when it loads the module. A `shared_array!` symbol is \
                 `<name>_<line>_<column>_<hash of file and module>`, and line and column are \
                 those of the outermost macro call: a macro of yours that declares shared \
                 arrays repeats them, within one call or when a `#[clustered]` kernel copies \
                 its body into each schedule. Call `shared_array!` in the kernel's body itself \
                 (or in a helper function), and give each `shared_array!` its own name",
                ptx.display()
            ),
            BuildError::DuplicateConstant { symbol, ptx } => write!(
                f,
                "the PTX ({}) declares the constant table `{symbol}` twice: its name is its \
                 symbol in the module, the name the host writes it by, so two \
                 `constant_table!`s in the kernels crate (in any modules) need two names",
                ptx.display()
            ),
            BuildError::ConstantMemory { bytes, ptx } => write!(
                f,
                "the PTX ({}) declares {bytes} bytes of constant tables, more than the \
                 {CONSTANT_MEMORY_BYTES} a module may have: keep the large ones in global memory \
                 (a buffer argument) and the tables that every thread of a warp reads at once \
                 in `constant_table!`",
                ptx.display()
            ),
            BuildError::LaunchBounds(why) => write!(
                f,
                "{why}: the PTX does not hold what #[launch_bounds] emits; please report this with the kernel's source"
            ),
            BuildError::WritePtx { ptx, error } => {
                write!(f, "cannot write the PTX to {}: {error}", ptx.display())
            }
            BuildError::ReadPtx { ptx, error } => {
                write!(f, "cannot read the PTX at {}: {error}", ptx.display())
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// Configures and runs the PTX build of one kernels crate.
#[derive(Clone, Debug)]
pub struct Builder {
    crate_dir: PathBuf,
    arch: String,
    release: bool,
}

impl Builder {
    /// The kernels crate at `crate_dir`, relative to the calling crate's
    /// manifest directory (or absolute). Defaults: `sm_90`, release profile.
    pub fn new(crate_dir: impl AsRef<Path>) -> Self {
        let crate_dir = crate_dir.as_ref();
        let crate_dir = match env::var_os("CARGO_MANIFEST_DIR") {
            Some(root) if crate_dir.is_relative() => PathBuf::from(root).join(crate_dir),
            _ => crate_dir.to_path_buf(),
        };
        Builder {
            crate_dir,
            arch: "sm_90".into(),
            release: true,
        }
    }

    /// The GPU architecture to compile for (`-C target-cpu`), e.g. `sm_80`.
    /// PTX built for an older architecture is JIT-compiled for newer GPUs.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = arch.into();
        self
    }

    /// Build the kernels in the dev profile (unoptimised; for debugging).
    pub fn debug(mut self) -> Self {
        self.release = false;
        self
    }

    /// Builds the PTX, prints the `cargo:` lines a build script needs, and
    /// returns the path of the PTX file.
    pub fn build(self) -> Result<PathBuf, BuildError> {
        let manifest = self.crate_dir.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(BuildError::NoKernelCrate(self.crate_dir));
        }
        ensure_components()?;
        let out_dir =
            PathBuf::from(env::var_os("OUT_DIR").ok_or(BuildError::NotInBuildScript("OUT_DIR"))?);
        let target_dir = out_dir.join("ptx-target");
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());

        let mut command = Command::new(&cargo);
        command
            .arg("rustc")
            .arg("--manifest-path")
            .arg(&manifest)
            .args([
                "--lib",
                "--crate-type",
                "cdylib",
                "--target",
                TARGET,
                "-Zbuild-std=core",
                "--target-dir",
            ])
            .arg(&target_dir);
        if self.release {
            command.arg("--release");
        }
        // The profile the PTX needs, set here so that the kernels crate's
        // manifest (and its workspace's) need no profile of their own.
        // `--config` overrides whatever the manifests say, for this build only.
        let profile = if self.release { "release" } else { "dev" };
        for setting in PROFILE {
            command
                .arg("--config")
                .arg(format!("profile.{profile}.{setting}"));
        }
        command
            .args(["--", "-C"])
            .arg(format!("target-cpu={}", self.arch))
            // The kernels crate is an ordinary std crate on the host; only
            // its PTX build is `no_std` and needs the PTX kernel ABI.
            .args(["-Zcrate-attr=no_std", "-Zcrate-attr=feature(abi_ptx)"]);
        // The nested build must not inherit the outer build's configuration:
        // flags, wrappers and jobserver meant for the host crate.
        for var in [
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_RUSTFLAGS",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_MAKEFLAGS",
            "MAKEFLAGS",
            "MFLAGS",
        ] {
            command.env_remove(var);
        }
        for (var, _) in env::vars_os() {
            if let Some(var) = var.to_str() {
                if var.starts_with("CARGO_PROFILE_") || var.starts_with("CARGO_FEATURE_") {
                    command.env_remove(var);
                }
            }
        }
        command.env("RUSTC_BOOTSTRAP", "1");

        let status = command.status().map_err(|error| BuildError::Tool {
            tool: cargo.clone(),
            error,
        })?;
        if !status.success() {
            return Err(BuildError::Compile { status });
        }

        let profile = if self.release { "release" } else { "debug" };
        let package = package_name(&manifest).unwrap_or_else(|| "kernels".into());
        let ptx = target_dir
            .join(TARGET)
            .join(profile)
            .join(format!("{}.ptx", package.replace('-', "_")));
        if !ptx.is_file() {
            return Err(BuildError::NoPtx(ptx));
        }

        // Cargo's dep-info of the nested build lists every source it read:
        // the kernels, the device runtime, the macros (but the sysroot's).
        let dep_info = ptx.with_extension("d");
        let sources = std::fs::read_to_string(&dep_info)
            .map(|text| dep_info_sources(&text))
            .unwrap_or_default();
        for source in sources.iter().filter(|s| !s.contains("/lib/rustlib/")) {
            println!("cargo:rerun-if-changed={source}");
        }
        println!("cargo:rerun-if-changed={}", manifest.display());
        println!("cargo:rerun-if-env-changed=RUSTUP_TOOLCHAIN");
        let text = std::fs::read_to_string(&ptx).map_err(|error| BuildError::ReadPtx {
            ptx: ptx.clone(),
            error,
        })?;
        let symbols = module_symbols(&text);
        if let Some(symbol) = first_repeat(&symbols, ".shared") {
            return Err(BuildError::DuplicateShared { symbol, ptx });
        }
        if let Some(symbol) = first_repeat(&symbols, ".const") {
            return Err(BuildError::DuplicateConstant { symbol, ptx });
        }
        let bytes = constant_bytes(&symbols);
        if bytes > CONSTANT_MEMORY_BYTES {
            return Err(BuildError::ConstantMemory { bytes, ptx });
        }
        let problems = ptx_check::check(&text);
        if !problems.is_empty() {
            return Err(BuildError::Check(problems));
        }
        // The module as it is loaded: rustc's PTX with the launch bounds
        // written in, beside the nested build (never over its output, which
        // cargo may keep as fresh).
        let text = bounds::apply(&text).map_err(BuildError::LaunchBounds)?;
        // Pool kernels whose tasks may run beside a publishing warp, marked
        // for the host (`clustered_abi::pool`, "A publishing warp").
        let text = ptx_check::mark_publishing_warp_pools(&text);
        let ptx = out_dir.join(format!("{}.ptx", package.replace('-', "_")));
        std::fs::write(&ptx, text).map_err(|error| BuildError::WritePtx {
            ptx: ptx.clone(),
            error,
        })?;
        println!(
            "cargo:rustc-env={}={}",
            ptx_env_var(&package),
            ptx.display()
        );
        Ok(ptx)
    }
}

/// The environment variable that hands a kernels crate's PTX path to the
/// crate whose build script built it: `CLUSTERED_PTX_<PACKAGE>`, upper-cased,
/// `-` as `_`. `clustered::include_ptx!` reads it; nothing else need know it.
pub fn ptx_env_var(package: &str) -> String {
    format!("CLUSTERED_PTX_{}", package.to_uppercase().replace('-', "_"))
}

/// The one line of a build script: builds the kernels crate at `crate_dir`
/// (relative to the calling crate) for `sm_90` in release, or fails the build
/// with a message that says what to fix. Returns the PTX file's path.
pub fn build(crate_dir: impl AsRef<Path>) -> PathBuf {
    match Builder::new(crate_dir).build() {
        Ok(ptx) => ptx,
        Err(error) => {
            // A build script reports by failing; cargo shows its stderr.
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}

/// Installs the missing components with rustup where it can, for the
/// toolchain this build runs under (this machine's `RUSTUP_AUTO_INSTALL=0`
/// and a `rust-toolchain.toml` alone would not), else says what to run.
fn ensure_components() -> Result<(), BuildError> {
    let missing = missing_components()?;
    if missing.is_empty() {
        return Ok(());
    }
    let toolchain = env::var("RUSTUP_TOOLCHAIN").ok();
    let mut rustup = Command::new("rustup");
    rustup.args(["component", "add"]);
    rustup.args(REQUIRED_COMPONENTS.split(' '));
    if let Some(toolchain) = &toolchain {
        rustup.args(["--toolchain", toolchain]);
    }
    println!(
        "cargo:warning=installing the rustup components the NVPTX build needs: {REQUIRED_COMPONENTS}"
    );
    // Its output goes to the build log; success is judged by looking again.
    let _ = rustup.status();
    match missing_components()?.into_iter().next() {
        None => Ok(()),
        Some((component, looked_for)) => Err(BuildError::MissingComponent {
            component,
            looked_for,
            toolchain,
        }),
    }
}

/// The NVPTX build fails deep inside cargo without these; find out up front.
fn missing_components() -> Result<Vec<(&'static str, PathBuf)>, BuildError> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|error| BuildError::Tool {
            tool: rustc.clone(),
            error,
        })?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let host = env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
    Ok(missing_from(&sysroot, &host))
}

/// The components whose files `sysroot` lacks, each with the file looked for.
fn missing_from(sysroot: &Path, host: &str) -> Vec<(&'static str, PathBuf)> {
    let host_bin = sysroot.join("lib/rustlib").join(host).join("bin");
    let checks: [(&'static str, PathBuf); 3] = [
        (
            "rust-src",
            sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml"),
        ),
        (
            "llvm-bitcode-linker",
            host_bin
                .join("self-contained")
                .join(exe("llvm-bitcode-linker")),
        ),
        ("llvm-tools", host_bin.join(exe("llvm-link"))),
    ];
    checks
        .into_iter()
        .filter(|(_, path)| !path.exists())
        .collect()
}

fn exe(name: &str) -> String {
    format!("{name}{}", env::consts::EXE_SUFFIX)
}

/// The `name` of `[package]` in a manifest, read without a TOML parser.
fn package_name(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(value) = line
                .strip_prefix("name")
                .map(str::trim_start)
                .and_then(|l| l.strip_prefix('='))
            {
                return Some(value.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

/// Bytes of constant memory a module may declare (every GPU since Fermi).
const CONSTANT_MEMORY_BYTES: u64 = 64 * 1024;

/// A module-scope definition of a `.shared` or `.const` symbol.
#[derive(Debug, PartialEq, Eq)]
struct ModuleSymbol {
    /// `.shared` or `.const`.
    space: &'static str,
    name: String,
    /// Its array length times the element's bytes (`.b8 name[4096]`: 4096;
    /// `.u32 name`: 4); 0 where the PTX gives no length (`name[]`).
    bytes: u64,
}

/// Bytes of the `.const` symbols among `symbols`: what the module's
/// constant memory holds.
fn constant_bytes(symbols: &[ModuleSymbol]) -> u64 {
    symbols
        .iter()
        .filter(|s| s.space == ".const")
        .map(|s| s.bytes)
        .sum()
}

/// The first name that `symbols` defines twice in `space`.
///
/// Module scope is one namespace: ptxas refuses two definitions of a name.
/// `shared_array!` names its symbols uniquely, and a `constant_table!`'s
/// name is the user's; this catches what neither can.
fn first_repeat(symbols: &[ModuleSymbol], space: &str) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    symbols
        .iter()
        .filter(|s| s.space == space)
        .find(|s| !seen.insert(s.name.as_str()))
        .map(|s| s.name.clone())
}

/// The `.shared` and `.const` symbols that `ptx` defines at module scope
/// (outside every function body; `.extern` declarations do not count), in
/// order.
fn module_symbols(ptx: &str) -> Vec<ModuleSymbol> {
    let mut symbols = Vec::new();
    let mut depth = 0usize;
    let mut in_comment = false;
    for line in ptx.lines() {
        // Drop `/* .. */` (possibly across lines) and `// ..` comments.
        let mut code = String::new();
        let mut rest = line;
        loop {
            if in_comment {
                match rest.split_once("*/") {
                    Some((_, after)) => {
                        in_comment = false;
                        rest = after;
                    }
                    None => break,
                }
            } else {
                let line_comment = rest.find("//");
                let block_comment = rest.find("/*");
                match (line_comment, block_comment) {
                    (Some(l), Some(b)) if b < l => {
                        code.push_str(&rest[..b]);
                        in_comment = true;
                        rest = &rest[b + 2..];
                    }
                    (None, Some(b)) => {
                        code.push_str(&rest[..b]);
                        in_comment = true;
                        rest = &rest[b + 2..];
                    }
                    (Some(l), _) => {
                        code.push_str(&rest[..l]);
                        break;
                    }
                    (None, None) => {
                        code.push_str(rest);
                        break;
                    }
                }
            }
        }
        for statement in code.split(';') {
            let words: Vec<&str> = statement.split_whitespace().collect();
            let space = [".shared", ".const"]
                .into_iter()
                .find(|space| words.contains(space));
            if let (0, Some(space), false) = (depth, space, words.contains(&".extern")) {
                // `.shared .align 16 .b8 name[4096]` / `.shared .u32 name = 0`:
                // the first word after the directives that is not one.
                let declared = words
                    .iter()
                    .take_while(|w| **w != "=")
                    .find(|w| !w.starts_with('.') && w.parse::<u64>().is_err());
                if let Some(declared) = declared {
                    let (name, length) = match declared.split_once('[') {
                        Some((name, length)) => (
                            name,
                            length.trim_end_matches(']').parse::<u64>().unwrap_or(0),
                        ),
                        None => (*declared, 1),
                    };
                    let element = words
                        .iter()
                        .filter_map(|w| w.strip_prefix('.'))
                        .filter_map(|w| w.get(1..)?.parse::<u64>().ok())
                        .next()
                        .map_or(0, |bits| bits / 8);
                    symbols.push(ModuleSymbol {
                        space,
                        name: name.to_string(),
                        bytes: length * element,
                    });
                }
            }
            depth += statement.matches('{').count();
            depth = depth.saturating_sub(statement.matches('}').count());
        }
    }
    symbols
}

/// The prerequisites of a Makefile-style dep-info file (`target: a b\ c`).
fn dep_info_sources(text: &str) -> Vec<String> {
    let Some((_, prerequisites)) = text.lines().next().and_then(|line| line.split_once(": "))
    else {
        return Vec::new();
    };
    let mut sources = Vec::new();
    let mut current = String::new();
    let mut chars = prerequisites.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' if !current.is_empty() => sources.push(std::mem::take(&mut current)),
            ' ' => {}
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        sources.push(current);
    }
    sources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dep_info() {
        let text = "/t/k.ptx: /w/device/src/lib.rs /w/my\\ dir/a.rs /w/k/src/lib.rs\n\n/w/device/src/lib.rs:\n";
        assert_eq!(
            dep_info_sources(text),
            ["/w/device/src/lib.rs", "/w/my dir/a.rs", "/w/k/src/lib.rs"]
        );
        assert!(dep_info_sources("").is_empty());
    }

    #[test]
    fn finds_a_shared_symbol_defined_twice_at_module_scope() {
        let ptx = "\
.version 8.0
.target sm_90
.extern .shared .align 16 .b8 __clustered_dynamic_shared[];
.shared .align 16 .b8 tile_a_23_9_42[4096]; // tile_b_23_9_42 in a comment
.shared .align 16 .b8 tile_b_23_9_42[4096];
/* .shared .align 16 .b8 tile_a_23_9_42[4096];
   a commented-out block */
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.shared .align 4 .b8 local_7[16];
\tmov.u32 %r1, tile_a_23_9_42;
}
.visible .entry j()
{
\t.shared .align 4 .b8 local_7[16];
\tret;
}
";
        let duplicate_shared = |ptx: &str| first_repeat(&module_symbols(ptx), ".shared");
        assert_eq!(duplicate_shared(ptx), None, "function scopes are their own");
        let twice = format!("{ptx}.shared .align 16 .b8 tile_b_23_9_42[4096];\n");
        assert_eq!(duplicate_shared(&twice), Some("tile_b_23_9_42".into()));
        let initialised = ".shared .u32 flag;\n.shared .u32 flag = 0;\n";
        assert_eq!(duplicate_shared(initialised), Some("flag".into()));
        let extern_then_defined = ".extern .shared .b8 d[];\n.shared .b8 d[4];\n";
        assert_eq!(duplicate_shared(extern_then_defined), None);
        let error = BuildError::DuplicateShared {
            symbol: "tile_b_23_9_42".into(),
            ptx: "/k.ptx".into(),
        };
        let message = error.to_string();
        assert!(message.contains("`tile_b_23_9_42` twice"), "{message}");
        assert!(
            message.contains("give each `shared_array!` its own name"),
            "{message}"
        );
    }

    #[test]
    fn constant_tables_are_named_once_and_fit_in_64_kib() {
        let ptx = "\
.visible .const .align 16 .b8 TAPS[100];
.visible .const .align 16 .b8 OFFSETS[65436];
.shared .align 16 .b8 TAPS[16]; // another space's symbol: ptxas's business
.visible .entry k()
{
\t.const .align 4 .b8 inner[4];
\tret;
}
";
        let symbols = module_symbols(ptx);
        assert_eq!(first_repeat(&symbols, ".const"), None);
        assert_eq!(
            constant_bytes(&symbols),
            CONSTANT_MEMORY_BYTES,
            "two tables, the function's not counted"
        );
        let more = module_symbols(&format!("{ptx}.const .u32 ONE_MORE;\n"));
        assert_eq!(more.last().map(|s| s.bytes), Some(4));
        let twice = module_symbols(&format!("{ptx}.visible .const .align 16 .b8 TAPS[100];\n"));
        assert_eq!(first_repeat(&twice, ".const"), Some("TAPS".into()));
        let message = BuildError::ConstantMemory {
            bytes: 65540,
            ptx: "/k.ptx".into(),
        }
        .to_string();
        assert!(
            message.contains("65540 bytes") && message.contains("65536"),
            "{message}"
        );
        let message = BuildError::DuplicateConstant {
            symbol: "TAPS".into(),
            ptx: "/k.ptx".into(),
        }
        .to_string();
        assert!(
            message.contains("`TAPS` twice") && message.contains("need two names"),
            "{message}"
        );
    }

    #[test]
    fn missing_crate_is_a_clear_error() {
        let err = Builder::new("/nonexistent/kernels").build().unwrap_err();
        assert!(matches!(err, BuildError::NoKernelCrate(_)));
        assert!(err.to_string().contains("Cargo.toml"), "{err}");
    }

    #[test]
    fn missing_component_names_the_fix() {
        let err = BuildError::MissingComponent {
            component: "rust-src",
            looked_for: "/x".into(),
            toolchain: Some("1.95.0-x86_64-unknown-linux-gnu".into()),
        };
        assert!(err.to_string().contains(
            "`rustup component add rust-src llvm-bitcode-linker llvm-tools --toolchain 1.95.0-x86_64-unknown-linux-gnu`"
        ), "{err}");
    }

    #[test]
    fn finds_each_missing_component() {
        let sysroot = env::temp_dir().join(format!("clustered-builder-{}", std::process::id()));
        let all: Vec<_> = missing_from(&sysroot, "x86_64-unknown-linux-gnu")
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(all, ["rust-src", "llvm-bitcode-linker", "llvm-tools"]);
        let core = sysroot.join("lib/rustlib/src/rust/library/core");
        std::fs::create_dir_all(&core).unwrap();
        std::fs::write(core.join("Cargo.toml"), "").unwrap();
        let left: Vec<_> = missing_from(&sysroot, "x86_64-unknown-linux-gnu")
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        std::fs::remove_dir_all(&sysroot).unwrap();
        assert_eq!(left, ["llvm-bitcode-linker", "llvm-tools"]);
    }

    #[test]
    fn ptx_env_var_is_the_package_upper_cased() {
        assert_eq!(ptx_env_var("my-kernels"), "CLUSTERED_PTX_MY_KERNELS");
    }
}

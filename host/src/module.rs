//! PTX modules, kernel handles, kernel attributes and occupancy.

use std::ffi::{c_uint, c_void, CString};
use std::hash::Hasher;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUfunction_attribute as F, CUjit_option, CUresult};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, DriverError};
use cudarc::nvrtc::Ptx;

use crate::autotune::Fnv;
use crate::occupancy::{
    capped_name, plan_register_caps, ptx_with_register_caps, CapOutcome, RegisterCap, RegisterFile,
};
use crate::{Error, Gpu};

/// A loaded (JIT-compiled) PTX module.
#[derive(Debug, Clone)]
pub struct Module {
    module: Arc<CudaModule>,
    /// The schedules that needed compiling again at their kernel's
    /// occupancy (`occupancy.rs`), and what was decided for each; an applied
    /// cap's code is the entry `capped_name(entry)` of `module`.
    caps: Arc<Vec<RegisterCap>>,
    ctx: Arc<CudaContext>,
    entries: Vec<String>,
    params: Arc<Vec<(String, Option<Vec<u32>>)>>,
    /// Pool kernels the build marked for a publishing warp
    /// ([`ptx_publishing_warp_entries`]).
    publishing_warps: Arc<Vec<String>>,
    /// Typed launches' plans and kernels, per launch shape (see `typed.rs`).
    pub(crate) cache: Arc<std::sync::Mutex<crate::typed::Cache>>,
    /// FNV-1a of the PTX text: tuned launches re-tune when it changes.
    ptx_hash: u64,
    /// Whether the module was loaded with its marked fences as release
    /// fences ([`ModuleOptions::release_fences`]).
    release_fences: bool,
}

/// The entries that the build marked as pool kernels whose tasks may run
/// beside a publishing warp: the `__clustered_pool_warp_<entry>` globals
/// (`clustered_abi::pool::PUBLISHING_WARP_PREFIX`) in `ptx`.
pub fn ptx_publishing_warp_entries(ptx: &str) -> Vec<String> {
    use clustered_device::pool::PUBLISHING_WARP_PREFIX;
    ptx.lines()
        .filter(|line| line.trim_start().starts_with(".visible .global"))
        .filter_map(|line| {
            let at = line.find(PUBLISHING_WARP_PREFIX)? + PUBLISHING_WARP_PREFIX.len();
            Some(ptx_identifier(&line[at..]).to_string())
        })
        .filter(|entry| !entry.is_empty())
        .collect()
}

/// The PTX identifier `text` starts with (letters, digits, `_`, `$`;
/// empty if none).
pub(crate) fn ptx_identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The `.entry` names declared in PTX text (best effort: a plain scan, for
/// error messages).
pub fn ptx_entry_names(ptx: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in ptx.match_indices(".entry") {
        let before_ok = ptx[..at]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace());
        let rest = &ptx[at + ".entry".len()..];
        if !before_ok || !rest.starts_with(|c: char| c.is_whitespace()) {
            continue;
        }
        let name = ptx_identifier(rest.trim_start()).to_string();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The parameters of each `.entry` declared in PTX text: per entry, the
/// byte size of each `.param`, in order (`.u64` 8, `.u32` 4, `.b8 x[184]`
/// 184, ...). `None` for a parameter list this scan cannot read, so a
/// launch is then not checked rather than refused.
pub fn ptx_entry_params(ptx: &str) -> Vec<(String, Option<Vec<u32>>)> {
    let mut entries = Vec::new();
    for name in ptx_entry_names(ptx) {
        let Some(at) = ptx.find(&format!(".entry {name}(")) else {
            entries.push((name, None));
            continue;
        };
        let rest = &ptx[at + ".entry (".len() + name.len()..];
        let params = rest.find(')').and_then(|end| {
            let list = rest[..end].trim();
            if list.is_empty() {
                return Some(Vec::new());
            }
            list.split(',').map(param_bytes).collect()
        });
        entries.push((name, params));
    }
    entries
}

/// The byte size of one `.param` declaration.
fn param_bytes(declaration: &str) -> Option<u32> {
    let mut words = declaration.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let mut element = None;
    let mut last = "";
    for word in words {
        let bits = match word {
            ".b8" | ".u8" | ".s8" => Some(1),
            ".b16" | ".u16" | ".s16" | ".f16" => Some(2),
            ".b32" | ".u32" | ".s32" | ".f32" => Some(4),
            ".b64" | ".u64" | ".s64" | ".f64" => Some(8),
            _ => None,
        };
        element = element.or(bits);
        last = word;
    }
    let element: u32 = element?;
    // `name[184]`: an array of elements (a struct passed by value).
    match last.split_once('[') {
        Some((_, count)) => element.checked_mul(count.strip_suffix(']')?.parse().ok()?),
        None => Some(element),
    }
}

/// `ptx` with its marked release fences as `fence.release.gpu` and its
/// `.version` raised to ISA 8.6 where lower ([`clustered_device::abi::ptx`]), for a
/// driver of version `driver` (`cuDriverGetVersion`); `None` where nothing
/// changes: no mark, a driver that does not compile ISA 8.6, or no
/// `.version` line to raise.
pub fn ptx_with_release_fences(ptx: &str, driver: i32) -> Option<String> {
    use clustered_device::abi::ptx::{
        RELEASE_FENCE_DRIVER, RELEASE_FENCE_GPU, RELEASE_FENCE_GPU_MARKED, RELEASE_FENCE_ISA,
    };
    if driver < RELEASE_FENCE_DRIVER || !ptx.contains(RELEASE_FENCE_GPU_MARKED) {
        return None;
    }
    let (line, version) = ptx.lines().find_map(|line| {
        let (major, minor) = line
            .trim()
            .strip_prefix(".version")?
            .trim()
            .split_once('.')?;
        Some((
            line,
            (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?),
        ))
    })?;
    if version >= RELEASE_FENCE_ISA {
        return Some(ptx.replace(RELEASE_FENCE_GPU_MARKED, RELEASE_FENCE_GPU));
    }
    // That line and no other: where it starts in `ptx` (a subslice of it).
    let at = line.as_ptr() as usize - ptx.as_ptr() as usize;
    let (major, minor) = RELEASE_FENCE_ISA;
    let raised = format!(
        "{}.version {major}.{minor}{}",
        &ptx[..at],
        &ptx[at + line.len()..]
    );
    Some(raised.replace(RELEASE_FENCE_GPU_MARKED, RELEASE_FENCE_GPU))
}

/// Loads the PTX again with `cuModuleLoadDataEx` and an error-log buffer, to
/// get the JIT compiler's message after a failed load.
fn jit_error_log(ctx: &CudaContext, ptx: &CString) -> String {
    if ctx.bind_to_thread().is_err() {
        return String::new();
    }
    let mut log = vec![0u8; 16 * 1024];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    let mut module = std::ptr::null_mut();
    // SAFETY: the options point at a live buffer of the given size; a module
    // that loads after all is unloaded at once.
    unsafe {
        let r = sys::cuModuleLoadDataEx(
            &mut module,
            ptx.as_ptr() as *const c_void,
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        );
        if r == CUresult::CUDA_SUCCESS && !module.is_null() {
            let _ = sys::cuModuleUnload(module);
        }
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).trim().to_string()
}

/// How [`Gpu::load_module_with`] loads a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleOptions {
    keep_occupancy: bool,
    load_every_function: bool,
    release_fences: bool,
}

impl Default for ModuleOptions {
    fn default() -> Self {
        ModuleOptions {
            keep_occupancy: true,
            load_every_function: true,
            release_fences: true,
        }
    }
}

impl ModuleOptions {
    /// Whether a schedule whose registers would fit fewer warps per SM than
    /// its kernel's is compiled again at the kernel's occupancy (on by
    /// default; see [`Module::register_caps`]). Off, every entry runs as
    /// ptxas first compiled it: for measuring what the cap does.
    pub fn keep_occupancy(mut self, on: bool) -> Self {
        self.keep_occupancy = on;
        self
    }

    /// Whether every kernel of the module is loaded onto the device with
    /// the module (`cuFuncLoad`, on by default), whatever
    /// `CUDA_MODULE_LOADING` says. Under lazy loading (the driver's
    /// default since CUDA 12.2) a kernel is otherwise loaded at its first
    /// launch, and that load can wait for a kernel that never returns, such
    /// as a [`TaskPool`](crate::pool::TaskPool)'s blocks: the first launch
    /// of any other kernel while a pool runs would hang until the pool shut
    /// down (measured on an H100 by `suite/tests/pool_lazy_gpu.rs`). Off, loading is as the driver is set; then launch every kernel
    /// once before a pool starts.
    pub fn load_every_function(mut self, on: bool) -> Self {
        self.load_every_function = on;
        self
    }

    /// Whether the fences that need only their release half (a task pool
    /// worker's, after each task) become `fence.release.gpu` where the
    /// driver compiles PTX ISA 8.6 (CUDA 12.8 or newer; on by default): the
    /// module is then loaded as ISA 8.6. Built for older drivers, such a
    /// fence is `fence.acq_rel.gpu`, which also invalidates the SM's L1
    /// after every task (an H200: the k-means update chained 20 deep took
    /// 6.0-6.1 us a step with release fences, 9.6-10.4 without;
    /// docs/BENCHMARKS.md, "A release fence after each task"). Should
    /// the JIT refuse the rewritten PTX, the module loads as built; off,
    /// it always does. [`Module::release_fences`] says which was loaded.
    pub fn release_fences(mut self, on: bool) -> Self {
        self.release_fences = on;
        self
    }
}

impl Gpu {
    /// Loads PTX text (e.g. `include_str!` of rustc's nvptx64 output) into
    /// this GPU's context; the driver JIT-compiles it for the device.
    ///
    /// Schedules made by `#[clustered]` are kept at their kernel's
    /// occupancy where ptxas can do so without spilling
    /// ([`Module::register_caps`]), and on a driver of CUDA 12.8 or newer
    /// the fences that need only their release half become release fences
    /// ([`ModuleOptions::release_fences`]); [`Gpu::load_module_with`] can
    /// turn either off.
    ///
    /// On failure, [`Error::ModuleLoad`] carries the driver's error and the
    /// JIT compiler's log.
    pub fn load_module(&self, ptx: &str) -> Result<Module, Error> {
        self.load_module_with(ptx, ModuleOptions::default())
    }

    /// [`Gpu::load_module`] with options.
    pub fn load_module_with(&self, ptx: &str, options: ModuleOptions) -> Result<Module, Error> {
        let c_ptx = CString::new(ptx).map_err(|e| Error::InvalidPtx {
            nul_at: e.nul_position(),
        })?;
        let ctx = self.context().clone();
        let fenced = if options.release_fences {
            ptx_with_release_fences(ptx, self.driver_version()?)
        } else {
            None
        };
        // The PTX with release fences, else (no marks, an older driver, or
        // a JIT that refuses it after all) as built: the fences it has are
        // stronger, never wrong.
        let fenced = fenced.and_then(|text| {
            let module = ctx.load_module(Ptx::from_src(text.as_str())).ok()?;
            Some((module, text))
        });
        let release_fences = fenced.is_some();
        let (module, ptx) = match fenced {
            Some((module, text)) => (module, std::borrow::Cow::Owned(text)),
            None => {
                let module =
                    ctx.load_module(Ptx::from_src(ptx))
                        .map_err(|source| Error::ModuleLoad {
                            source,
                            log: jit_error_log(&ctx, &c_ptx),
                        })?;
                (module, std::borrow::Cow::Borrowed(ptx))
            }
        };
        let ptx = ptx.as_ref();
        let (module, caps) = if options.keep_occupancy {
            self.keep_occupancy(module, ptx)?
        } else {
            (module, Vec::new())
        };
        let entries = ptx_entry_names(ptx);
        if options.load_every_function {
            let capped = caps.iter().filter(|c| c.applied());
            let names = entries
                .iter()
                .cloned()
                .chain(capped.map(|c| capped_name(&c.plan.entry)));
            load_functions(&module, names)?;
        }
        // The code that runs changes with the caps: tuned choices follow it.
        let mut hash = Fnv::default();
        hash.write(ptx.as_bytes());
        for c in caps.iter().filter(|c| c.applied()) {
            hash.write(format!("\n.maxnreg {} {}", c.plan.cap, c.plan.entry).as_bytes());
        }
        let ptx_hash = hash.finish();
        Ok(Module {
            module,
            caps: Arc::new(caps),
            ctx,
            entries,
            params: Arc::new(ptx_entry_params(ptx)),
            publishing_warps: Arc::new(ptx_publishing_warp_entries(ptx)),
            cache: Default::default(),
            ptx_hash,
            release_fences,
        })
    }

    /// Loads the module again with a copy of each schedule whose registers
    /// fit fewer warps per SM than its kernel's, capped with `.maxnreg`
    /// (`occupancy.rs`); returns the module to use (that one if it
    /// compiled, else `module`) and a decision per schedule.
    fn keep_occupancy(
        &self,
        module: Arc<CudaModule>,
        ptx: &str,
    ) -> Result<(Arc<CudaModule>, Vec<RegisterCap>), Error> {
        let device = &RegisterFile::from(self.properties());
        let attributes = |name: &str| -> Result<Option<KernelAttributes>, Error> {
            match module.load_function(name) {
                Ok(func) => KernelAttributes::query(&func).map(Some),
                Err(DriverError(CUresult::CUDA_ERROR_NOT_FOUND)) => Ok(None),
                Err(source) => Err(Error::Driver {
                    context: "cuModuleGetFunction",
                    source,
                }),
            }
        };
        let planned = plan_register_caps(ptx, device, |name| {
            attributes(name).map(|a| a.map(|a| a.registers_per_thread))
        })?;
        if planned.is_empty() {
            return Ok((module, Vec::new()));
        }
        let caps: Vec<(&str, u32)> = planned.iter().map(|p| (p.entry.as_str(), p.cap)).collect();
        let compiled = match ptx_with_register_caps(ptx, &caps) {
            None => Err("the entries' extent in the PTX could not be read".to_string()),
            Some(text) => self
                .context()
                .load_module(Ptx::from_src(text))
                .map_err(|e| e.to_string()),
        };
        let outcome = |entry: &str| -> Result<CapOutcome, Error> {
            let capped = match &compiled {
                Ok(capped) => capped,
                Err(error) => return Ok(CapOutcome::NotCompiled(error.clone())),
            };
            Ok(match capped.load_function(&capped_name(entry)) {
                Err(e) => CapOutcome::NotCompiled(e.to_string()),
                Ok(func) => {
                    let after = KernelAttributes::query(&func)?;
                    let before = attributes(entry)?.map_or(0, |a| a.local_bytes_per_thread);
                    CapOutcome::judge(
                        after.registers_per_thread,
                        before,
                        after.local_bytes_per_thread,
                    )
                }
            })
        };
        let decided = planned
            .into_iter()
            .map(|plan| {
                let outcome = outcome(&plan.entry)?;
                Ok(RegisterCap { plan, outcome })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok((compiled.unwrap_or(module), decided))
    }
}

/// Loads each function `names` of `module` onto the device now
/// (`cuFuncLoad`; nothing to do under eager loading).
fn load_functions(
    module: &Arc<CudaModule>,
    names: impl Iterator<Item = String>,
) -> Result<(), Error> {
    for name in names {
        let func = module
            .load_function(&name)
            .map_err(|source| Error::Driver {
                context: "cuModuleGetFunction",
                source,
            })?;
        load_on_device(&func)?;
    }
    Ok(())
}

/// Loads `func`'s code onto the device now (`cuFuncLoad`), whatever
/// `CUDA_MODULE_LOADING` says: a lazy load at its first launch could wait
/// for a kernel that never returns.
pub(crate) fn load_on_device(func: &CudaFunction) -> Result<(), Error> {
    // SAFETY: a function of a loaded module, alive while `func` is.
    let loaded = unsafe { sys::cuFuncLoad(func.cu_function()) };
    if loaded != CUresult::CUDA_SUCCESS {
        return Err(Error::Driver {
            context: "cuFuncLoad",
            source: DriverError(loaded),
        });
    }
    Ok(())
}

impl Module {
    /// The context the module was loaded into.
    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// A hash of the PTX it was loaded from (FNV-1a, the same in every
    /// process).
    pub fn ptx_hash(&self) -> u64 {
        self.ptx_hash
    }

    /// The kernel (`.entry`) called `name`.
    ///
    /// Reads its [`KernelAttributes`] once, here, so launches validate
    /// without driver calls.
    pub fn kernel(&self, name: &str) -> Result<Kernel, Error> {
        self.load_kernel(name, self.cap_applied(name))
    }

    /// Whether `name` runs capped (see [`Module::register_caps`]).
    fn cap_applied(&self, name: &str) -> bool {
        self.caps
            .iter()
            .any(|c| c.plan.entry == name && c.applied())
    }

    /// `name`'s own code, without the register cap that [`Module::kernel`]
    /// gives it; `None` when it has none.
    pub(crate) fn uncapped_kernel(&self, name: &str) -> Result<Option<Kernel>, Error> {
        if !self.cap_applied(name) {
            return Ok(None);
        }
        self.load_kernel(name, false).map(Some)
    }

    /// `name`'s kernel, its capped copy's code where `capped`.
    fn load_kernel(&self, name: &str, capped: bool) -> Result<Kernel, Error> {
        let not_found = || Error::KernelNotFound {
            name: name.to_string(),
            available: self.entries.clone(),
        };
        if name.contains('\0') {
            return Err(not_found());
        }
        self.ctx
            .bind_to_thread()
            .map_err(Error::driver("cuCtxSetCurrent"))?;
        let func = match self.module.load_function(&if capped {
            capped_name(name)
        } else {
            name.to_string()
        }) {
            Ok(f) => f,
            Err(DriverError(CUresult::CUDA_ERROR_NOT_FOUND)) => return Err(not_found()),
            Err(source) => {
                return Err(Error::Driver {
                    context: "cuModuleGetFunction",
                    source,
                })
            }
        };
        let attributes = KernelAttributes::query(&func)?;
        let params = self
            .params
            .iter()
            .find(|(entry, _)| entry == name)
            .and_then(|(_, params)| params.clone());
        Ok(Kernel {
            name: name.to_string(),
            func,
            ctx: self.ctx.clone(),
            attributes,
            params: params.map(Arc::from),
            publishing_warp: self.publishing_warps.iter().any(|entry| entry == name),
            occupancy: Default::default(),
        })
    }

    /// Whether the module runs its marked fences as `fence.release.gpu`
    /// (loaded as PTX ISA 8.6: [`ModuleOptions::release_fences`] on, a
    /// driver of CUDA 12.8 or newer, PTX with marks, and the JIT took it);
    /// else it runs as built. The kernels' attributes cannot tell:
    /// [`KernelAttributes::ptx_version`] is the virtual architecture.
    pub fn release_fences(&self) -> bool {
        self.release_fences
    }

    /// The schedules whose registers would have fit fewer warps per SM
    /// than their kernel's, and whether each now runs compiled again at the
    /// kernel's occupancy ([`ModuleOptions::keep_occupancy`]).
    pub fn register_caps(&self) -> &[RegisterCap] {
        &self.caps
    }

    /// The `.entry` names of the module's PTX text.
    pub fn entry_names(&self) -> &[String] {
        &self.entries
    }

    /// The cudarc module, for anything this crate does not wrap.
    pub fn cuda_module(&self) -> &Arc<CudaModule> {
        &self.module
    }
}

/// What the driver reports about one compiled kernel
/// (`cuFuncGetAttribute`). A plain struct so that tests can make one up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelAttributes {
    /// Most threads per block this kernel can launch with; lower than the
    /// device's limit when its registers per thread (or `.maxntid`) demand.
    pub max_threads_per_block: u32,
    /// Statically declared shared memory per block, in bytes.
    pub static_shared_bytes: u32,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Local memory (spills, stack) per thread, in bytes.
    pub local_bytes_per_thread: u32,
    /// Constant memory used, in bytes.
    pub const_bytes: u32,
    /// PTX ISA virtual architecture it was compiled for, times 10 (90 = sm_90).
    pub ptx_version: u32,
    /// Binary architecture it was compiled for, times 10 (90 = sm_90).
    pub binary_version: u32,
}

impl KernelAttributes {
    /// Reads the attributes of a cudarc function.
    pub fn query(func: &CudaFunction) -> Result<Self, Error> {
        let attr = |a: F| -> Result<u32, Error> {
            func.get_attribute(a)
                .map(|v| u32::try_from(v).unwrap_or(0))
                .map_err(Error::driver("cuFuncGetAttribute"))
        };
        Ok(KernelAttributes {
            max_threads_per_block: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            static_shared_bytes: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            registers_per_thread: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes_per_thread: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            const_bytes: attr(F::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            ptx_version: attr(F::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: attr(F::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }
}

/// Active blocks per SM, per (block threads, dynamic shared bytes).
type OccupancyCache = Vec<((u32, u32), u32)>;

/// A kernel of a loaded [`Module`] (keeps the module alive).
#[derive(Debug, Clone)]
pub struct Kernel {
    name: String,
    func: CudaFunction,
    ctx: Arc<CudaContext>,
    attributes: KernelAttributes,
    /// Byte sizes of the `.param`s in the PTX, when they could be read.
    params: Option<Arc<[u32]>>,
    /// The build marked it a pool kernel whose tasks may run beside a
    /// publishing warp (`clustered_abi::pool`, "A publishing warp").
    publishing_warp: bool,
    /// Occupancy answers per (block threads, dynamic shared bytes): planning
    /// asks for each launch shape, and the driver's answer never changes.
    occupancy: Arc<std::sync::Mutex<OccupancyCache>>,
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the build marked it a pool kernel whose tasks may run beside
    /// a publishing warp (`clustered_abi::pool`, "A publishing warp"):
    /// [`TaskPool::gpu`](crate::pool::TaskPool::gpu) then launches it with
    /// one more warp per block.
    pub fn publishing_warp(&self) -> bool {
        self.publishing_warp
    }

    /// Its attributes, read when the kernel was looked up.
    pub fn attributes(&self) -> KernelAttributes {
        self.attributes
    }

    /// The byte size of each parameter the PTX declares, in order, when the
    /// module's text could be read; launches check their arguments against it.
    pub fn param_bytes(&self) -> Option<&[u32]> {
        self.params.as_deref()
    }

    /// The cudarc function, e.g. for `stream.launch_builder(..)` directly.
    pub fn function(&self) -> &CudaFunction {
        &self.func
    }

    /// The context the kernel was loaded into.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Active blocks per SM for blocks of `block_threads` threads and
    /// `dynamic_shared_bytes` of dynamic shared memory
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`). 0 means the
    /// configuration cannot run at all.
    ///
    /// Dynamic shared memory over 48 KiB counts only up to what the kernel is
    /// currently allowed ([`Kernel::allow_dynamic_shared`]).
    ///
    /// Answers are cached per kernel (shared by its clones): the driver's
    /// answer for one shape never changes while the shared-memory limit does
    /// not, and planning asks once per launch shape.
    pub fn occupancy(&self, block_threads: u32, dynamic_shared_bytes: u32) -> Result<u32, Error> {
        let key = (block_threads, dynamic_shared_bytes);
        let cached = |cache: &OccupancyCache| {
            cache
                .iter()
                .find(|(k, _)| *k == key)
                .map(|&(_, blocks)| blocks)
        };
        if let Some(blocks) = self.occupancy.lock().ok().and_then(|c| cached(&c)) {
            return Ok(blocks);
        }
        self.ctx
            .bind_to_thread()
            .map_err(Error::driver("cuCtxSetCurrent"))?;
        let blocks = self
            .func
            .occupancy_max_active_blocks_per_multiprocessor(
                block_threads,
                dynamic_shared_bytes as usize,
                None,
            )
            .map_err(Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor"))?;
        if let Ok(mut cache) = self.occupancy.lock() {
            cache.push((key, blocks));
        }
        Ok(blocks)
    }

    /// The kernel's current `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub fn max_dynamic_shared_bytes(&self) -> Result<u32, Error> {
        self.ctx
            .bind_to_thread()
            .map_err(Error::driver("cuCtxSetCurrent"))?;
        self.func
            .get_attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            .map(|v| u32::try_from(v).unwrap_or(0))
            .map_err(Error::driver("cuFuncGetAttribute"))
    }

    /// Lets the kernel use `bytes` of dynamic shared memory per block when
    /// that is more than it currently may (opt-in beyond 48 KiB). Launches do
    /// this automatically; call it before [`Kernel::occupancy`] to ask about
    /// such sizes.
    pub fn allow_dynamic_shared(&self, bytes: u32) -> Result<(), Error> {
        if self.max_dynamic_shared_bytes()? >= bytes {
            return Ok(());
        }
        let value = i32::try_from(bytes).map_err(|_| Error::SizeOverflow {
            what: "the dynamic shared memory size",
        })?;
        self.func
            .set_attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value)
            .map_err(Error::driver(
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
            ))?;
        // Occupancy over 48 KiB depends on this limit: ask again.
        if let Ok(mut cache) = self.occupancy.lock() {
            cache.clear();
        }
        Ok(())
    }
}

//! Turns a simulated thread's stack overflow into [`CpuError::StackOverflow`].
//!
//! An overflow faults on the guard page below the thread's stack
//! ([`super::stacks`]). A `SIGSEGV` handler, installed once per process,
//! checks that the fault address is the guard page of the thread the
//! scheduler is running on this host thread; if so it uses corosensei's trap
//! support to end that coroutine as if it had returned
//! [`Ended::StackOverflow`], on a fresh stack, and the scheduler reports the
//! error. Any other fault goes to the handler that was installed before
//! (Rust's own, which reports the host thread's stack overflows) or to the
//! default action. The handler runs on the host thread's alternate signal
//! stack (the overflowed stack has no room for it): Rust gives its threads
//! one; [`prepare`] adds one to a thread that has none.
//!
//! Elsewhere than Linux on x86-64 or AArch64 no handler is installed: the
//! guard page still stops the thread, and the process dies of `SIGSEGV`.
//!
//! The frames of the overflowed thread are abandoned, not unwound: what they
//! own leaks, which is harmless since the run stops.
//!
//! [`CpuError::StackOverflow`]: super::CpuError::StackOverflow

/// How a simulated thread's coroutine ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The kernel returned.
    Returned,
    /// The thread reached its guard page; its frames were abandoned.
    StackOverflow,
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use std::cell::RefCell;
    use std::sync::{Once, OnceLock};
    use std::{mem, ptr};

    use corosensei::trap::TrapHandlerRegs;

    static INSTALL: Once = Once::new();
    /// The `SIGSEGV` action before ours, for faults that are not ours.
    static PREVIOUS: OnceLock<Previous> = OnceLock::new();

    struct Previous(libc::sigaction);
    // SAFETY: plain data (a handler address, flags and a mask), only read.
    unsafe impl Sync for Previous {}
    unsafe impl Send for Previous {}

    /// An alternate signal stack this module gave the host thread.
    struct AltStack {
        memory: *mut libc::c_void,
        size: usize,
    }

    impl Drop for AltStack {
        fn drop(&mut self) {
            // SAFETY: disables the stack before unmapping it.
            unsafe {
                let disable = libc::stack_t {
                    ss_sp: ptr::null_mut(),
                    ss_flags: libc::SS_DISABLE,
                    ss_size: 0,
                };
                libc::sigaltstack(&disable, ptr::null_mut());
                libc::munmap(self.memory, self.size);
            }
        }
    }

    thread_local! {
        static ALT_STACK: RefCell<Option<AltStack>> = const { RefCell::new(None) };
    }

    /// Installs the handler (once per process) and makes sure this host
    /// thread has an alternate signal stack to run it on.
    pub fn prepare() {
        INSTALL.call_once(|| {
            // SAFETY: a valid handler and flags; the old action is kept.
            unsafe {
                let mut action: libc::sigaction = mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let mut previous: libc::sigaction = mem::zeroed();
                if libc::sigaction(libc::SIGSEGV, &action, &mut previous) == 0 {
                    let _ = PREVIOUS.set(Previous(previous));
                }
            }
        });
        // SAFETY: queries the current alternate stack.
        let mut current: libc::stack_t = unsafe { mem::zeroed() };
        let has_one = unsafe { libc::sigaltstack(ptr::null(), &mut current) } == 0
            && current.ss_flags & libc::SS_DISABLE == 0;
        if has_one {
            return;
        }
        let size = 64 * 1024;
        // SAFETY: a fresh private mapping, registered as this thread's
        // alternate stack and unregistered before it is unmapped.
        unsafe {
            let memory = libc::mmap(
                ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if memory == libc::MAP_FAILED {
                return; // An overflow then kills the process: no corruption.
            }
            let stack = libc::stack_t {
                ss_sp: memory,
                ss_flags: 0,
                ss_size: size,
            };
            if libc::sigaltstack(&stack, ptr::null_mut()) != 0 {
                libc::munmap(memory, size);
                return;
            }
            ALT_STACK.with(|alt| *alt.borrow_mut() = Some(AltStack { memory, size }));
        }
    }

    unsafe extern "C" fn on_fault(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        unsafe {
            let address = (*info).si_addr() as usize;
            let context = &mut *context.cast::<libc::ucontext_t>();
            #[cfg(target_arch = "x86_64")]
            let sp = context.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
            #[cfg(target_arch = "aarch64")]
            let sp = context.uc_mcontext.sp as usize;
            if let Some(regs) = super::super::engine::overflow_trap(address, sp) {
                set_registers(context, regs);
                return;
            }
            match PREVIOUS.get() {
                Some(Previous(previous))
                    if previous.sa_sigaction != libc::SIG_DFL
                        && previous.sa_sigaction != libc::SIG_IGN =>
                {
                    if previous.sa_flags & libc::SA_SIGINFO != 0 {
                        let handler: extern "C" fn(
                            libc::c_int,
                            *mut libc::siginfo_t,
                            *mut libc::c_void,
                        ) = mem::transmute(previous.sa_sigaction);
                        handler(signal, info, (context as *mut libc::ucontext_t).cast());
                    } else {
                        let handler: extern "C" fn(libc::c_int) =
                            mem::transmute(previous.sa_sigaction);
                        handler(signal);
                    }
                }
                // The default action: returning re-runs the faulting
                // instruction, which then kills the process.
                _ => {
                    let mut default: libc::sigaction = mem::zeroed();
                    default.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(signal, &default, ptr::null_mut());
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn set_registers(context: &mut libc::ucontext_t, regs: TrapHandlerRegs) {
        let TrapHandlerRegs {
            rip,
            rsp,
            rbp,
            rdi,
            rsi,
        } = regs;
        let gregs = &mut context.uc_mcontext.gregs;
        gregs[libc::REG_RIP as usize] = rip as i64;
        gregs[libc::REG_RSP as usize] = rsp as i64;
        gregs[libc::REG_RBP as usize] = rbp as i64;
        gregs[libc::REG_RDI as usize] = rdi as i64;
        gregs[libc::REG_RSI as usize] = rsi as i64;
    }

    #[cfg(target_arch = "aarch64")]
    fn set_registers(context: &mut libc::ucontext_t, regs: TrapHandlerRegs) {
        let TrapHandlerRegs {
            pc,
            sp,
            x0,
            x1,
            x29,
            lr,
        } = regs;
        let mcontext = &mut context.uc_mcontext;
        mcontext.pc = pc;
        mcontext.sp = sp;
        mcontext.regs[0] = x0;
        mcontext.regs[1] = x1;
        mcontext.regs[29] = x29;
        mcontext.regs[30] = lr;
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(crate) use imp::prepare;

/// Elsewhere: no handler; the guard page makes an overflow a `SIGSEGV`.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub(crate) fn prepare() {}

//! The calling thread's CPU ([`CpuSource`]) and pinning a thread to one
//! ([`pin_current_thread`]).

/// Where the calling thread's CPU number comes from.
///
/// ```
/// use pagealloc_heap::CpuSource;
///
/// let source = CpuSource::detect();
/// println!("reading the CPU from {}: {}", source.name(), source.cpu());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CpuSource {
    /// The `cpu_id` field of the thread's rseq area, which the kernel rewrites whenever it
    /// resumes the thread on a CPU: a load, no call. The area sits at `__rseq_offset` bytes
    /// from the thread pointer (glibc ≥ 2.35, which registers it for every thread it starts).
    #[non_exhaustive]
    Rseq {
        /// `__rseq_offset`.
        offset: isize,
    },
    /// `sched_getcpu()`: no rseq area registered (older glibc, `glibc.pthread.rseq=0`, a
    /// kernel or a tool such as valgrind without rseq), or a CPU without the thread-pointer
    /// read below.
    SchedGetcpu,
}

/// Offset of `cpu_id` in the kernel's `struct rseq` (after `u32 cpu_id_start`).
const RSEQ_CPU_ID_OFFSET: isize = 4;

impl CpuSource {
    /// Rseq if glibc registered an area for this process, else `sched_getcpu`. The symbols are
    /// looked up at run time, so a binary still runs with a C library that lacks them.
    pub fn detect() -> CpuSource {
        if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            return CpuSource::SchedGetcpu;
        }
        // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only searches the loaded
        // objects' symbol tables; it returns null when a name is absent.
        let (size, offset) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
            )
        };
        if size.is_null() || offset.is_null() {
            return CpuSource::SchedGetcpu;
        }
        // SAFETY: glibc defines `__rseq_size` as `const unsigned int` and `__rseq_offset` as
        // `const ptrdiff_t`, initialised before any user code runs and never written after.
        let (size, offset) = unsafe { (*size.cast::<u32>(), *offset.cast::<isize>()) };
        // glibc sets the size to 0 when registration failed or is disabled.
        if size == 0 {
            return CpuSource::SchedGetcpu;
        }
        // The calling thread's area must hold a CPU already (registration happens at thread
        // start); if not, do not trust it for any thread.
        if rseq_cpu(offset) < 0 {
            return CpuSource::SchedGetcpu;
        }
        CpuSource::Rseq { offset }
    }

    /// A short name for output: `rseq cpu_id` or `sched_getcpu`.
    pub fn name(self) -> &'static str {
        match self {
            CpuSource::Rseq { .. } => "rseq cpu_id",
            CpuSource::SchedGetcpu => "sched_getcpu",
        }
    }

    /// The CPU the calling thread runs on (negative only if the system cannot say).
    #[inline]
    pub fn cpu(self) -> i32 {
        if let CpuSource::Rseq { offset } = self {
            let c = rseq_cpu(offset);
            if c >= 0 {
                return c;
            }
        }
        // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
        unsafe { libc::sched_getcpu() }
    }
}

/// The calling thread's rseq `cpu_id` (negative while unregistered).
#[inline]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn rseq_cpu(offset: isize) -> i32 {
    let tp: usize;
    // SAFETY: reads the thread pointer register, which every thread has; no memory access,
    // no stack use, flags preserved.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    // SAFETY: as above (TPIDR_EL0 is the thread pointer on aarch64 Linux).
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
    };
    let field = tp.wrapping_add_signed(offset + RSEQ_CPU_ID_OFFSET) as *const u32;
    // SAFETY: `CpuSource::detect` built an Rseq source only after glibc reported a registered
    // area (`__rseq_size > 0`); glibc places every thread's area at the same offset from its
    // thread pointer, inside its thread control block, which lives as long as the thread, so
    // `field` is valid and 4-byte aligned (the area is 32-byte aligned). The kernel writes it
    // only while the thread is not running user code, so a volatile read sees a whole value.
    unsafe { field.read_volatile() as i32 }
}

#[inline]
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn rseq_cpu(_offset: isize) -> i32 {
    -1
}

/// Pin the calling thread to host CPU `cpu` (`sched_setaffinity`).
///
/// # Errors
///
/// For a CPU the system does not have or the thread may not use.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    }
    // SAFETY: `cpu_set_t` is a plain bit array, for which all-zero bytes are the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above), so the bit is inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; the set is a valid, initialised `cpu_set_t` of the
    // size passed, read by the kernel only during the call.
    let r = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::configured_cpus;

    /// The CPU source answers what `sched_getcpu` answers (allowing for the odd migration
    /// between the two reads), on the main thread and on a new one.
    #[test]
    fn the_cpu_source_agrees_with_sched_getcpu() {
        let check = || {
            let source = CpuSource::detect();
            let n = configured_cpus() as i32;
            let mut agree = 0;
            for _ in 0..1000 {
                let ours = source.cpu();
                // SAFETY: as in CpuSource::cpu.
                let theirs = unsafe { libc::sched_getcpu() };
                assert!((0..n).contains(&ours), "cpu {ours} of {n}");
                agree += u32::from(ours == theirs);
            }
            assert!(agree >= 900, "{source:?} agreed {agree} times in 1000");
        };
        check();
        std::thread::spawn(check).join().unwrap();
    }
}

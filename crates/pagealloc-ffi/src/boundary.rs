//! What every call across the C boundary goes through: panics stopped before they reach C, the
//! thread's last error message, and the copying of strings into the caller's buffers.
//!
//! With the `std` feature a panic inside a call is caught and becomes
//! `PAGEALLOC_ERR_PANICKED`. Without it there is no unwinding to catch: the panic goes to the
//! program's `#[panic_handler]`, which must not return (a freestanding kernel halts). Either way
//! no panic unwinds into C (an `extern "C"` function that would unwind aborts, Rust ≥ 1.81).
#![allow(unsafe_code)] // Reading C strings and buffers: each use is one unsafe fn, documented.

use core::ffi::{c_char, c_int, CStr};
use core::fmt;

use crate::error::{Failure, PageallocError};

/// Run one call of the C API: its result as a status code (`Ok(n)` is returned as `n`,
/// which is `PAGEALLOC_OK` or a length), a panic as `PAGEALLOC_ERR_PANICKED`, after `on_panic`.
pub(crate) fn run(f: impl FnOnce() -> Result<c_int, Failure>, on_panic: impl FnOnce()) -> c_int {
    match catch(f) {
        Ok(Ok(n)) => n,
        Ok(Err(Failure(code))) => code.code(),
        Err(()) => {
            on_panic();
            record(&"the library panicked (a bug: please report it)");
            PageallocError::Panicked.code()
        }
    }
}

#[cfg(feature = "std")]
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
    // Unwind safety: a call that panicked poisons its allocator (`on_panic`), so no later
    // call sees state the panic may have left half-changed; a map call works on a copy, which
    // a panic throws away.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| ())
}

#[cfg(not(feature = "std"))]
fn catch<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
    Ok(f())
}

#[cfg(feature = "std")]
std::thread_local! {
    /// The calling thread's last error message (empty before the first failure).
    static LAST_ERROR: core::cell::RefCell<alloc::string::String> =
        const { core::cell::RefCell::new(alloc::string::String::new()) };
}

/// Keep `detail` as the calling thread's last error message (`std` only; without it nothing
/// is kept, and a failure costs no allocation).
pub(crate) fn record(detail: &dyn fmt::Display) {
    #[cfg(feature = "std")]
    {
        use core::fmt::Write;
        LAST_ERROR.with(|last| {
            // A message being read right now (it cannot be: reads copy out at once) is kept.
            if let Ok(mut s) = last.try_borrow_mut() {
                s.clear();
                let _ = write!(s, "{detail}");
            }
        });
    }
    #[cfg(not(feature = "std"))]
    let _ = detail;
}

/// Copy the calling thread's last error message into `buf` as `copy_str` does.
pub(crate) fn last_error_into(buf: Option<&mut [c_char]>) -> Result<c_int, Failure> {
    #[cfg(feature = "std")]
    return LAST_ERROR.with(|last| copy_str(&last.borrow(), buf));
    #[cfg(not(feature = "std"))]
    copy_str("", buf)
}

/// A caller's buffer of `len` bytes: `None` if NULL, empty if `len` is 0 (whatever `buf` is).
///
/// # Safety
/// `buf` is NULL, or valid for writes of `len` bytes that nothing else reads or writes for `'a`.
pub(crate) unsafe fn out_buf<'a>(buf: *mut c_char, len: usize) -> Option<&'a mut [c_char]> {
    if len == 0 {
        return Some(&mut []);
    }
    // SAFETY: not NULL, and `len` writable bytes no one else touches, by the contract above
    // (every `c_char` bit pattern is valid, so the bytes need not be initialised values).
    (!buf.is_null()).then(|| unsafe { core::slice::from_raw_parts_mut(buf, len) })
}

/// Copy `s` into `buf` as `snprintf` does: at most `buf.len() - 1` bytes and a NUL, nothing
/// into an empty buffer. Returns the length of all of `s`, so a result of the buffer's length
/// or more means it was cut short.
pub(crate) fn copy_str(s: &str, buf: Option<&mut [c_char]>) -> Result<c_int, Failure> {
    let buf = buf.ok_or_else(|| Failure::null("buf"))?;
    let full = c_int::try_from(s.len())
        .map_err(|_| Failure::new(PageallocError::BadArgument, "string too long"))?;
    if let Some(last) = buf.len().checked_sub(1) {
        let n = s.len().min(last);
        for (d, &c) in buf.iter_mut().zip(&s.as_bytes()[..n]) {
            *d = c as c_char;
        }
        buf[n] = 0;
    }
    Ok(full)
}

/// A C string argument, if not NULL.
///
/// # Safety
/// `s` is NULL or points to a NUL-terminated string that stays valid and unchanged for `'a`.
pub(crate) unsafe fn opt_c_str<'a>(s: *const c_char) -> Option<&'a CStr> {
    // SAFETY: not NULL, and NUL-terminated and valid for 'a by this function's contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) })
}

/// A C string argument as UTF-8; `what` names it in the error.
pub(crate) fn utf8<'a>(s: Option<&'a CStr>, what: &str) -> Result<&'a str, Failure> {
    s.ok_or_else(|| Failure::null(what))?.to_str().map_err(|_| {
        Failure::new(PageallocError::BadArgument, format_args!("`{what}` is not UTF-8"))
    })
}

/// An output argument, or the failure its NULL is. Checked before the work, so a call never
/// does work it cannot report (an allocated block always reaches the caller).
pub(crate) fn required<'a, T>(p: Option<&'a mut T>, what: &str) -> Result<&'a mut T, Failure> {
    p.ok_or_else(|| Failure::null(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_copied_as_snprintf_does() {
        let mut buf = [0x55 as c_char; 6];
        assert_eq!(copy_str("pgfree", Some(&mut buf)).unwrap(), 6);
        assert_eq!(as_str(&buf), "pgfre");
        assert_eq!(copy_str("pgfree", Some(&mut [])).unwrap(), 6);
        assert_eq!(copy_str("pgfree", None).unwrap_err().0, PageallocError::NullPointer);
    }

    fn as_str(b: &[c_char]) -> alloc::string::String {
        b.iter().take_while(|&&c| c != 0).map(|&c| char::from(c as u8)).collect()
    }

    #[cfg(feature = "std")]
    #[test]
    fn a_panic_becomes_a_code_and_runs_the_poisoning() {
        let mut poisoned = false;
        let code = run(|| panic!("deliberate"), || poisoned = true);
        assert_eq!(code, PageallocError::Panicked.code());
        assert!(poisoned);
        let mut buf = [0 as c_char; 64];
        last_error_into(Some(&mut buf)).unwrap();
        let msg = as_str(&buf);
        assert!(msg.starts_with("the library panicked"), "{msg}");
    }
}

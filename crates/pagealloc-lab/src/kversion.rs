//! A kernel version as `--kernel` takes it (`6.7`, `5.15`, `6.13.2`, `v6.1`, or `uname -r`'s
//! `5.14.0-325.el9.x86_64`), for choosing the `/proc` layout a view is printed in
//! ([`crate::procfs::ProcLayout`]; the version → layout table is in docs/real-data.md).

use std::fmt;
use std::str::FromStr;

/// A mainline release, `major.minor[.patch]`. Ordered by (major, minor, patch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelVersion {
    /// `6` of 6.13.2.
    pub major: u32,
    /// `13` of 6.13.2.
    pub minor: u32,
    /// `2` of 6.13.2 (0 when not given).
    pub patch: u32,
}

impl KernelVersion {
    /// The oldest kernel whose layouts the lab prints: the oldest one a real file in
    /// `tests/fixtures/realdata/` comes from (3.2). Older kernels are refused, not guessed.
    pub const OLDEST: KernelVersion = KernelVersion::new(3, 2);

    /// `major.minor` (patch 0).
    pub const fn new(major: u32, minor: u32) -> KernelVersion {
        KernelVersion { major, minor, patch: 0 }
    }

    /// Is this `major.minor` or later?
    pub fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if self.patch > 0 {
            write!(f, ".{}", self.patch)?;
        }
        Ok(())
    }
}

/// Why a `--kernel` value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelVersionError {
    /// Not `major.minor[.patch]` with decimal numbers.
    Malformed(String),
    /// A well-formed version older than [`KernelVersion::OLDEST`].
    TooOld(KernelVersion),
}

impl fmt::Display for KernelVersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelVersionError::Malformed(s) => write!(
                f,
                "`{s}` is not a kernel version: give MAJOR.MINOR or MAJOR.MINOR.PATCH \
                 (e.g. 6.13, 5.15, 4.3, v6.1, or `uname -r` output)"
            ),
            KernelVersionError::TooOld(v) => write!(
                f,
                "kernel {v} is older than {}, the oldest kernel whose /proc layouts the lab \
                 prints",
                KernelVersion::OLDEST
            ),
        }
    }
}

impl std::error::Error for KernelVersionError {}

impl FromStr for KernelVersion {
    type Err = KernelVersionError;

    /// `6.13`, `6.13.2`, `v6.1`; a distribution suffix after `-` or `+` (`5.14.0-325.el9`) is
    /// ignored. Two or three dot-separated decimal numbers, nothing else.
    fn from_str(s: &str) -> Result<KernelVersion, KernelVersionError> {
        let malformed = || KernelVersionError::Malformed(s.to_owned());
        let trimmed = s.trim();
        let bare = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let release = bare.split(['-', '+']).next().unwrap_or_default();
        let parts: Vec<&str> = release.split('.').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(malformed());
        }
        let mut numbers = [0u32; 3];
        for (n, part) in numbers.iter_mut().zip(&parts) {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            *n = part.parse().map_err(|_| malformed())?;
        }
        let v = KernelVersion { major: numbers[0], minor: numbers[1], patch: numbers[2] };
        if v < KernelVersion::OLDEST {
            return Err(KernelVersionError::TooOld(v));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Result<KernelVersion, KernelVersionError> {
        s.parse()
    }

    #[test]
    fn parses_the_forms_people_type() {
        assert_eq!(v("6.7"), Ok(KernelVersion::new(6, 7)));
        assert_eq!(v("5.15"), Ok(KernelVersion::new(5, 15)));
        assert_eq!(v("4.4"), Ok(KernelVersion::new(4, 4)));
        assert_eq!(v("4.3"), Ok(KernelVersion::new(4, 3)));
        assert_eq!(v("6.13.2"), Ok(KernelVersion { major: 6, minor: 13, patch: 2 }));
        assert_eq!(v("v6.1"), Ok(KernelVersion::new(6, 1)));
        assert_eq!(v("5.14.0-325.el9.x86_64"), Ok(KernelVersion { major: 5, minor: 14, patch: 0 }));
        assert_eq!(v("6.13-rc2"), Ok(KernelVersion::new(6, 13)));
        assert_eq!(v("3.2"), Ok(KernelVersion::OLDEST));
        assert_eq!(v("6.13.2").unwrap().to_string(), "6.13.2");
        assert_eq!(v("v6.1").unwrap().to_string(), "6.1");
    }

    #[test]
    fn junk_is_a_typed_error() {
        for junk in ["", "6", "six.one", "6.", ".6", "6.1.2.3", "6.x", "-6.1", "6..1", "6.1a", "v"]
        {
            assert_eq!(v(junk), Err(KernelVersionError::Malformed(junk.to_owned())), "{junk}");
        }
        assert_eq!(v("99999999999.1"), Err(KernelVersionError::Malformed("99999999999.1".into())));
        assert_eq!(v("2.6"), Err(KernelVersionError::TooOld(KernelVersion::new(2, 6))));
        assert_eq!(v("3.1"), Err(KernelVersionError::TooOld(KernelVersion::new(3, 1))));
        assert!(v("2.6").unwrap_err().to_string().contains("older than 3.2"));
    }

    #[test]
    fn order_and_at_least() {
        assert!(v("4.3").unwrap() < v("4.4").unwrap());
        assert!(v("4.10").unwrap() > v("4.9").unwrap());
        assert!(v("6.13.2").unwrap() > v("6.13").unwrap());
        assert!(v("6.12").unwrap().at_least(6, 12));
        assert!(!v("6.11.9").unwrap().at_least(6, 12));
    }
}

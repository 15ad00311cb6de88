//! Values and errors of the key/value interface: what a preset file or `presets --json`
//! carries, what a key accepts, and why a setting was refused.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A switch or tunable value as preset files and JSON carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwitchValue {
    /// A bool switch.
    Bool(bool),
    /// An integer tunable.
    Int(i64),
    /// An enum switch's kebab-case name, or `"default"` for an unset optional tunable.
    Str(String),
    /// A per-zone list (`lowmem_reserve_ratio`).
    List(Vec<i64>),
}

impl SwitchValue {
    /// The value's kind, for error messages.
    pub fn kind(&self) -> ValueKind {
        match self {
            SwitchValue::Bool(_) => ValueKind::Bool,
            SwitchValue::Int(_) => ValueKind::Int,
            SwitchValue::Str(_) => ValueKind::Str,
            SwitchValue::List(_) => ValueKind::List,
        }
    }
}

impl From<bool> for SwitchValue {
    fn from(b: bool) -> SwitchValue {
        SwitchValue::Bool(b)
    }
}

impl From<i64> for SwitchValue {
    fn from(n: i64) -> SwitchValue {
        SwitchValue::Int(n)
    }
}

impl From<&str> for SwitchValue {
    fn from(s: &str) -> SwitchValue {
        SwitchValue::Str(s.to_owned())
    }
}

impl From<String> for SwitchValue {
    fn from(s: String) -> SwitchValue {
        SwitchValue::Str(s)
    }
}

impl From<Vec<i64>> for SwitchValue {
    fn from(v: Vec<i64>) -> SwitchValue {
        SwitchValue::List(v)
    }
}

impl fmt::Display for SwitchValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchValue::Bool(b) => write!(f, "{b}"),
            SwitchValue::Int(n) => write!(f, "{n}"),
            SwitchValue::Str(s) => write!(f, "\"{s}\""),
            SwitchValue::List(v) => {
                f.write_str("[")?;
                for (i, n) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// The kind of a [`SwitchValue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// `true` / `false`.
    Bool,
    /// An integer.
    Int,
    /// A string.
    Str,
    /// A list of integers.
    List,
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ValueKind::Bool => "bool",
            ValueKind::Int => "integer",
            ValueKind::Str => "string",
            ValueKind::List => "list",
        })
    }
}

/// The values a key accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// `true` or `false`.
    Bool,
    /// One of these kebab-case names.
    Names(&'static [&'static str]),
    /// An integer in `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// 0, or an integer in `min..=max`.
    ZeroOrInt {
        /// Smallest accepted non-zero value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// `"default"`, or an integer in `min..=max`.
    DefaultOrInt {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// A list of exactly `len` integers, each at most `max` (values below 1 are stored as 0).
    IntList {
        /// Required length (one per zone type).
        len: usize,
        /// Largest accepted element.
        max: i64,
    },
}

impl Accepted {
    /// Does an integer value fall in the accepted range? False for non-integer kinds.
    pub fn admits(self, n: i64) -> bool {
        match self {
            Accepted::Int { min, max } | Accepted::DefaultOrInt { min, max } => {
                (min..=max).contains(&n)
            }
            Accepted::ZeroOrInt { min, max } => n == 0 || (min..=max).contains(&n),
            Accepted::Bool | Accepted::Names(_) | Accepted::IntList { .. } => false,
        }
    }
}

impl fmt::Display for Accepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accepted::Bool => f.write_str("true or false"),
            Accepted::Names(names) => write!(f, "one of: {}", Joined(names)),
            Accepted::Int { min, max } => write!(f, "an integer in {min}..={max}"),
            Accepted::ZeroOrInt { min, max } => write!(f, "0 or an integer in {min}..={max}"),
            Accepted::DefaultOrInt { min, max } => {
                write!(f, "\"{DEFAULT_WORD}\" or an integer in {min}..={max}")
            }
            Accepted::IntList { len, max } => {
                write!(f, "a list of {len} integers, each at most {max} (below 1 means 0)")
            }
        }
    }
}

/// Which keys an unknown-key error lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySet {
    /// [`Policy::KEYS`].
    Switches,
    /// [`Tunables::KEYS`].
    Tunables,
    /// Both.
    Any,
}

impl KeySet {
    /// The keys of this set.
    pub fn keys(self) -> impl Iterator<Item = &'static str> {
        let (switches, tunables): (&[&str], &[&str]) = match self {
            KeySet::Switches => (Policy::KEYS, &[]),
            KeySet::Tunables => (&[], Tunables::KEYS),
            KeySet::Any => (Policy::KEYS, Tunables::KEYS),
        };
        switches.iter().chain(tunables).copied()
    }
}

/// A refused key or value.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyError {
    /// No switch or tunable has this name.
    UnknownKey {
        /// The name given.
        key: String,
        /// The names that exist.
        known: KeySet,
    },
    /// The value is of a kind the key never takes (e.g. an integer for an enum switch).
    WrongKind {
        /// The key.
        key: &'static str,
        /// The kind given.
        got: ValueKind,
        /// What the key takes.
        accepted: Accepted,
    },
    /// The value has the right kind but is not one the key takes.
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The value given (or found, for [`Tunables::validate`]).
        got: SwitchValue,
        /// What the key takes.
        accepted: Accepted,
    },
}

impl PolicyError {
    /// The key the error is about.
    pub fn key(&self) -> &str {
        match self {
            PolicyError::UnknownKey { key, .. } => key,
            PolicyError::WrongKind { key, .. } | PolicyError::OutOfRange { key, .. } => key,
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::UnknownKey { key, known } => {
                let known: Vec<&str> = known.keys().collect();
                write!(f, "unknown key `{key}`; known keys: {}", Joined(&known))
            }
            PolicyError::WrongKind { key, got, accepted } => {
                write!(f, "`{key}` takes {accepted}, not a {got}")
            }
            PolicyError::OutOfRange { key, got, accepted } => {
                write!(f, "`{key}` = {got} is not accepted; it takes {accepted}")
            }
        }
    }
}

/// Formats a list of names as `a, b, c`.
pub(super) struct Joined<'a>(&'a [&'a str]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(s)?;
        }
        Ok(())
    }
}

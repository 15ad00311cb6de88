//! Reading the lab's input files: machine, preset and cost files, zoneinfo dumps and the
//! `/proc/sys/vm` values beside them, traces, result rows. Every one comes through [`read`]
//! (or [`read_stdin`] where a command documents `-`), which
//!
//! - refuses what is not a regular file — a device such as `/dev/zero`, a FIFO, a socket, a
//!   directory — before opening it (opening a FIFO would wait for a writer);
//! - refuses a file larger than the cap of its [`InputKind`], and reads at most cap + 1
//!   bytes to find out (a file that grows while it is read, or a `/proc` file whose size
//!   reads 0, is still bounded), so an input can never make the lab allocate more than the
//!   cap before a parser checks anything.
//!
//! The caps are documented defaults; `--max-input-mib N` (any command) or the environment
//! variable [`CAP_ENV`] set one cap for every kind instead (the flag wins).

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// The environment variable that sets the cap of every input, in MiB.
pub const CAP_ENV: &str = "PAGEALLOC_MAX_INPUT_MIB";

/// The largest cap `--max-input-mib` and [`CAP_ENV`] take, MiB (1 TiB).
pub const MAX_CAP_MIB: u64 = 1 << 20;

const MIB: u64 = 1 << 20;

/// What an input is, which sets its default cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A TOML file written by hand: machine, preset, cost profile. 1 MiB, 200 times the
    /// largest built-in machine file: the TOML parser needs about 75 bytes of memory per byte
    /// of a file of small values, so 64 MiB would already cost ~5 GB.
    Config,
    /// A `/proc` dump: zoneinfo, a `/proc/sys/vm` value. 64 MiB: a zoneinfo of 16 nodes × 4
    /// zones × 1024 CPUs is about 10 MiB.
    Dump,
    /// Bulk data: a trace's text, result rows. 1 GiB.
    Data,
}

impl InputKind {
    /// The cap when neither the flag nor [`CAP_ENV`] sets one, bytes.
    pub fn default_cap(self) -> u64 {
        match self {
            InputKind::Config => MIB,
            InputKind::Dump => 64 * MIB,
            InputKind::Data => 1024 * MIB,
        }
    }

    /// What the kind covers, for messages.
    fn what(self) -> &'static str {
        match self {
            InputKind::Config => "machine, preset and cost files",
            InputKind::Dump => "zoneinfo and /proc dumps",
            InputKind::Data => "traces and result rows",
        }
    }
}

/// The cap `--max-input-mib` set, MiB.
static FLAG_CAP_MIB: OnceLock<u64> = OnceLock::new();

/// Set the cap of every input from `--max-input-mib` (the first call wins).
pub fn set_cap_mib(mib: u64) {
    let _ = FLAG_CAP_MIB.set(mib);
}

/// Why an input was not read.
#[derive(Debug)]
pub enum InputError {
    /// Not a regular file: what it is instead.
    NotRegular {
        /// `a character device`, `a directory`, …
        what: &'static str,
    },
    /// Larger than the cap.
    TooLarge {
        /// The cap, bytes.
        cap: u64,
        /// The kind whose cap it is.
        kind: InputKind,
        /// Where the cap came from.
        from: CapFrom,
    },
    /// [`CAP_ENV`] is set to something that is not a cap.
    BadCap {
        /// Its value.
        value: String,
    },
    /// The operating system refused.
    Io(std::io::Error),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NotRegular { what } => write!(
                f,
                "it is {what}, not a regular file; the lab reads its inputs from regular files \
                 (and from standard input only where a command takes `-`)"
            ),
            InputError::TooLarge { cap, kind, from } => {
                let cap = fmt_cap(*cap);
                match from {
                    CapFrom::Default => {
                        write!(f, "it is larger than {cap}, the limit of {}", kind.what())?
                    }
                    CapFrom::Flag => {
                        write!(f, "it is larger than {cap}, the limit --max-input-mib set")?
                    }
                    CapFrom::Env => write!(f, "it is larger than {cap}, the limit {CAP_ENV} set")?,
                }
                write!(f, "; raise it with --max-input-mib N or {CAP_ENV}=N")
            }
            InputError::BadCap { value } => write!(
                f,
                "{CAP_ENV}={value:?}: takes a whole number of MiB from 1 to {MAX_CAP_MIB}"
            ),
            InputError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for InputError {}

impl From<std::io::Error> for InputError {
    fn from(e: std::io::Error) -> Self {
        InputError::Io(e)
    }
}

/// `1 MiB`, `64 MiB`, `1 GiB`, or bytes when not whole MiB.
fn fmt_cap(bytes: u64) -> String {
    if bytes % (1024 * MIB) == 0 {
        format!("{} GiB", bytes / (1024 * MIB))
    } else if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes}-byte")
    }
}

/// Where a cap came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapFrom {
    /// The kind's default.
    Default,
    /// `--max-input-mib`.
    Flag,
    /// [`CAP_ENV`].
    Env,
}

/// The cap of `kind` in bytes and where it comes from.
fn cap(kind: InputKind) -> Result<(u64, CapFrom), InputError> {
    if let Some(&mib) = FLAG_CAP_MIB.get() {
        return Ok((mib * MIB, CapFrom::Flag));
    }
    match std::env::var(CAP_ENV) {
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(mib) if (1..=MAX_CAP_MIB).contains(&mib) => Ok((mib * MIB, CapFrom::Env)),
            _ => Err(InputError::BadCap { value: v }),
        },
        Err(_) => Ok((kind.default_cap(), CapFrom::Default)),
    }
}

/// What a file type is, in words.
fn file_type_name(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Read the regular file `path` of kind `kind` whole, at most its cap. The caller names the
/// file in its context (`cannot read machine file `…``).
///
/// # Errors
/// [`InputError`]: not a regular file, larger than the cap, or the system's error.
pub fn read(path: &Path, kind: InputKind) -> Result<Vec<u8>, InputError> {
    let (cap, from) = cap(kind)?;
    // stat before open: opening a FIFO would block until someone writes to it.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(InputError::NotRegular { what: file_type_name(meta.file_type()) });
    }
    let file = File::open(path)?;
    // The file opened may not be the one stat saw (a rename in between): check it again.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(InputError::NotRegular { what: file_type_name(meta.file_type()) });
    }
    if meta.len() > cap {
        return Err(InputError::TooLarge { cap, kind, from });
    }
    read_capped(file, cap).map_err(|e| match e {
        Capped::Over => InputError::TooLarge { cap, kind, from },
        Capped::Io(e) => InputError::Io(e),
    })
}

/// [`read`] as UTF-8 text.
///
/// # Errors
/// What [`read`] refuses, or bytes that are not UTF-8.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, InputError> {
    String::from_utf8(read(path, kind)?).map_err(|e| {
        InputError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {} is not)", e.utf8_error().valid_up_to()),
        ))
    })
}

/// Read standard input whole, at most the cap of `kind` (for commands that document `-`).
///
/// # Errors
/// Larger than the cap, or the system's error.
pub fn read_stdin(kind: InputKind) -> Result<Vec<u8>, InputError> {
    let (cap, from) = cap(kind)?;
    read_capped(std::io::stdin().lock(), cap).map_err(|e| match e {
        Capped::Over => InputError::TooLarge { cap, kind, from },
        Capped::Io(e) => InputError::Io(e),
    })
}

/// Why [`read_capped`] stopped.
#[derive(Debug)]
enum Capped {
    /// More than the cap: cap + 1 bytes were read and dropped.
    Over,
    Io(std::io::Error),
}

/// Everything `r` gives, or [`Capped::Over`] after reading cap + 1 bytes.
fn read_capped(r: impl Read, cap: u64) -> Result<Vec<u8>, Capped> {
    let mut buf = Vec::new();
    r.take(cap.saturating_add(1)).read_to_end(&mut buf).map_err(Capped::Io)?;
    if buf.len() as u64 > cap {
        return Err(Capped::Over);
    }
    Ok(buf)
}

/// `path`, or `standard input` for `-`: how messages name an input.
pub fn label(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".to_owned()
    } else {
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An endless source stops at the cap + 1 bytes: /dev/zero given as a pipe.
    #[test]
    fn an_endless_stream_is_cut_at_the_cap() {
        assert!(matches!(read_capped(std::io::repeat(0), 4096), Err(Capped::Over)));
        let mut counted = Counting { left: u64::MAX, read: 0 };
        assert!(matches!(read_capped(&mut counted, 1000), Err(Capped::Over)));
        assert_eq!(counted.read, 1001, "reads cap + 1 bytes, no more");
        assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), b"abc");
        assert!(matches!(read_capped(&b"abcd"[..], 3), Err(Capped::Over)));
    }

    /// A reader that counts what is taken from it.
    struct Counting {
        left: u64,
        read: u64,
    }

    impl Read for &mut Counting {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.left) as usize;
            buf[..n].fill(b'x');
            self.left -= n as u64;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn special_files_are_refused_before_reading() {
        let e = read(Path::new("/dev/zero"), InputKind::Config).unwrap_err();
        assert!(matches!(e, InputError::NotRegular { what: "a character device" }), "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), InputKind::Data).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn caps_print_in_their_unit() {
        assert_eq!(fmt_cap(MIB), "1 MiB");
        assert_eq!(fmt_cap(64 * MIB), "64 MiB");
        assert_eq!(fmt_cap(1024 * MIB), "1 GiB");
        assert_eq!(fmt_cap(10), "10-byte");
        let e = InputError::TooLarge { cap: MIB, kind: InputKind::Config, from: CapFrom::Default };
        let s = e.to_string();
        assert!(
            s.contains("larger than 1 MiB, the limit of machine, preset and cost files"),
            "{s}"
        );
        assert!(s.contains("--max-input-mib") && s.contains(CAP_ENV), "{s}");
    }
}

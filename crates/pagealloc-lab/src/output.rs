//! Output files checked before the work that fills them: a report, a cost profile or a
//! machine file whose path cannot be written should stop the command at once, not after a
//! full `reproduce` or a calibration has run for minutes and its result is lost.

use std::fs::OpenOptions;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Refuse `path` as the output `what` (a few words: "the report") unless a file can be
/// written there now. The probe opens the file for appending, so an existing file keeps
/// its contents until the command writes it; a file the probe created is removed again.
/// A directory, a missing parent directory and a read-only place are refused with the path.
pub fn check_writable(path: &Path, what: &str) -> Result<()> {
    if path.is_dir() {
        bail!("{what} `{}` is a directory; give a file name", path.display());
    }
    let existed = path.exists();
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("cannot write {what} `{}`", path.display()))?;
    if !existed {
        std::fs::remove_file(path)
            .with_context(|| format!("removing the probe of {what} `{}`", path.display()))?;
    }
    Ok(())
}

/// [`check_writable`] for an optional output.
pub fn check_optional(path: Option<&Path>, what: &str) -> Result<()> {
    path.map_or(Ok(()), |p| check_writable(p, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pagealloc-output-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_writable_new_file_passes_and_is_not_left_behind() {
        let dir = scratch("new");
        let path = dir.join("report.html");
        check_writable(&path, "the report").unwrap();
        assert!(!path.exists(), "the probe removes the file it created");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_existing_file_passes_and_keeps_its_contents() {
        let dir = scratch("existing");
        let path = dir.join("cost.toml");
        std::fs::write(&path, "kept").unwrap();
        check_writable(&path, "the cost profile").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_directory_or_a_directory_is_refused_with_the_path() {
        let dir = scratch("refused");
        let missing = dir.join("no-such-dir").join("x.html");
        let e = check_writable(&missing, "the report").unwrap_err();
        assert!(format!("{e:#}").contains("cannot write the report"), "{e:#}");
        assert!(format!("{e:#}").contains("no-such-dir"), "{e:#}");
        let e = check_writable(&dir, "the report").unwrap_err();
        assert!(format!("{e:#}").contains("is a directory"), "{e:#}");
        assert!(check_optional(None, "the report").is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }
}

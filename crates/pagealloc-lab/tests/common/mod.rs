//! What the CLI test files share: the binary under test, and a finished command's output as
//! text. Each test file is its own crate and uses only part of this.
#![allow(dead_code)]

use assert_cmd::assert::Assert;
use assert_cmd::Command;

/// The `pagealloc` binary of this build.
pub fn pagealloc() -> Command {
    Command::cargo_bin("pagealloc").expect("binary built")
}

/// What a finished command printed on stdout.
pub fn stdout(out: &Assert) -> String {
    String::from_utf8(out.get_output().stdout.clone()).expect("stdout is UTF-8")
}

/// What a finished command printed on stderr.
pub fn stderr(out: &Assert) -> String {
    String::from_utf8(out.get_output().stderr.clone()).expect("stderr is UTF-8")
}

/// Run `pagealloc ARGS`, expect success, return stdout.
pub fn stdout_of(args: &[&str]) -> String {
    stdout(&pagealloc().args(args).assert().success())
}

/// Run `pagealloc ARGS`, expect failure, return stderr.
pub fn stderr_of(args: &[&str]) -> String {
    stderr(&pagealloc().args(args).assert().failure())
}

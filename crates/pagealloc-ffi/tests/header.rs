//! `include/pagealloc.h` is what cbindgen generates from the sources: C users take the
//! checked-in header, with no code generation, so it must not fall behind. Set
//! `PAGEALLOC_BLESS=1` to rewrite it after changing the API.

use std::path::Path;

#[test]
fn the_checked_in_header_is_the_generated_one() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen parses the sources")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = dir.join("include/pagealloc.h");
    if std::env::var_os("PAGEALLOC_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/pagealloc.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        let first = checked_in.lines().zip(generated.lines()).position(|(a, b)| a != b);
        let line = first.unwrap_or(checked_in.lines().count().min(generated.lines().count()));
        panic!(
            "include/pagealloc.h differs from what the sources generate, from line {}:\n  \
             checked in: {:?}\n  generated:  {:?}\nregenerate it with \
             `PAGEALLOC_BLESS=1 cargo test -p pagealloc-ffi --test header` and commit it",
            line + 1,
            checked_in.lines().nth(line),
            generated.lines().nth(line),
        );
    }
}

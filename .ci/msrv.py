#!/usr/bin/env python3
"""Check the publishable crates' declared MSRV against what their dependencies declare.

For each publishable crate (every workspace member whose `publish` is not false), walk its
normal and build dependencies, optional ones included, transitively, through `cargo metadata
--format-version 1 --locked --all-features` (the versions Cargo.lock pins), and fail if any of them declares a `rust-version`
above the crate's own. A dependency that declares none cannot be checked: it is listed, and is
an error unless it is named in UNDECLARED_OK with the reason it is known to build.

Dev-dependencies are not part of the contract (a user of the crate never builds them); they
are reported, not checked. Dependencies behind a cfg no user sets (`cfg(loom)`) are skipped.

What this does not check: whether the crates' own code builds with that toolchain. Clippy's
`incompatible_msrv` lint (on in `cargo clippy`, it reads `rust-version`) flags standard
library items stabilised later; language features, items re-exported through a newer prelude,
and trait paths are not checked by either. See the README's "Minimum Rust version".
"""

import json
import subprocess
import sys

# Dependencies with no `rust-version`, and why they are known to build with ours.
UNDECLARED_OK = {
    "scopeguard": "lock_api's; its README and crate docs state Rust 1.20",
    "bit_field": "x86_64's (feature x86_64), which declares Rust 1.59 and builds it",
    "volatile": "x86_64's (feature x86_64), which declares Rust 1.59 and builds it; nightly "
    "features only behind its own `unstable` feature, which x86_64 does not set",
}
# Custom cfgs no user's build sets: dependencies only they enable are not the users'.
INTERNAL_CFGS = {"cfg(loom)"}


def version_key(v):
    return tuple(int(x) for x in v.split("."))


def main():
    out = subprocess.run(
        # Every feature: an optional dependency a feature turns on is part of the contract.
        ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    meta = json.loads(out)
    packages = {p["id"]: p for p in meta["packages"]}
    deps_of = {n["id"]: n["deps"] for n in meta["resolve"]["nodes"]}
    members = [packages[i] for i in meta["workspace_members"]]
    publishable = [p for p in members if p.get("publish") != []]

    failures = []
    for root in publishable:
        ours = root.get("rust_version")
        if ours is None:
            failures.append(f"{root['name']}: declares no rust-version")
            continue
        seen, stack, dev = set(), [(root["id"], [root["name"]])], []
        while stack:
            pid, path = stack.pop()
            for d in deps_of[pid]:
                kinds = d["dep_kinds"]
                used = [k for k in kinds if k["kind"] != "dev" and k["target"] not in INTERNAL_CFGS]
                if pid == root["id"] and any(k["kind"] == "dev" for k in kinds) and not used:
                    dev.append(packages[d["pkg"]])
                if not used or d["pkg"] in seen:
                    continue
                seen.add(d["pkg"])
                stack.append((d["pkg"], path + [packages[d["pkg"]]["name"]]))
                p = packages[d["pkg"]]
                rv = p.get("rust_version")
                via = " <- ".join(reversed(path))
                if rv is None:
                    if p["name"] not in UNDECLARED_OK:
                        failures.append(
                            f"{root['name']} {ours}: {p['name']} {p['version']} (via {via}) "
                            "declares no rust-version"
                        )
                elif version_key(rv) > version_key(ours):
                    failures.append(
                        f"{root['name']} {ours}: {p['name']} {p['version']} (via {via}) "
                        f"needs {rv}"
                    )
        names = sorted(f"{packages[i]['name']} {packages[i].get('rust_version') or '-'}" for i in seen)
        print(f"{root['name']} rust-version {ours}: {len(seen)} dependencies checked ({', '.join(names)})")
        for p in sorted(dev, key=lambda p: p["name"]):
            rv = p.get("rust_version") or "undeclared"
            note = " (above ours: tests and benches need a newer toolchain)" if (
                p.get("rust_version") and version_key(p["rust_version"]) > version_key(ours)
            ) else ""
            print(f"  dev-dependency, not checked: {p['name']} {p['version']} needs {rv}{note}")
    for f in failures:
        print(f"MSRV: {f}", file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()

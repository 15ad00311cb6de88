//! `pagealloc`: the lab's command line. One file per verb under `cmd/`.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod cmd;

/// The pagealloc lab: drive the page allocator, inspect it, compare policies.
#[derive(Debug, Parser)]
#[command(name = "pagealloc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a random program of allocations and frees against the allocator, checking every
    /// answer against an oracle and every invariant with the validator; print what happened.
    Exercise(cmd::exercise::Args),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Exercise(args) => cmd::exercise::run(&args),
    }
}

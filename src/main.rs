//! `oscost`: what does the operating system cost my program?
//!
//! The binary is the thin top layer: it parses the command line, runs experiments from the
//! measuring layer, summarises and renders them through the report layer, and turns every
//! failure into one line on stderr and an exit status (0 ok, 2 usage or run error, 130 Ctrl-C).
#![forbid(unsafe_code)]

mod args;
mod commands;
mod config;
mod dispatch;
mod fuse_serve;
mod inputs;
mod lists;
mod machine;
mod progress;
mod run_id;
mod session;
mod stdout;
mod store;
mod worker;

use oscost_report::termtext::one_line;
use std::process::ExitCode;

/// A refused allocation ends the run with one line, not an abort.
#[global_allocator]
static ALLOCATOR: oscost_sys::oom::Reporting = oscost_sys::oom::Reporting;

fn main() -> ExitCode {
    // Before any thread: under an address-space limit, the threads' stacks get its room.
    oscost_sys::oom::one_arena_under_address_limit();
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == worker::ROLE)
    {
        return worker::main();
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == oscost_measure::experiments::fs::server::ROLE)
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        return fuse_serve::main(&args);
    }
    match dispatch::run() {
        Ok(code) => code,
        Err(err) => {
            if err.downcast_ref::<oscost_measure::Cancelled>().is_some()
                || err
                    .downcast_ref::<oscost_report::output::Interrupted>()
                    .is_some()
            {
                // "interrupted", and which file holds what finished before it.
                eprintln!("oscost: {}", one_line(&err.to_string()));
                return ExitCode::from(130);
            }
            // One line whatever it quotes: a case id from a file may hold a newline or an
            // escape sequence.
            eprintln!("oscost: {}", one_line(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

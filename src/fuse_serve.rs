//! The FUSE server of the `fs` experiment: `oscost __fuse-serve DIR` mounts its in-memory file
//! system on DIR and serves it until its standard input ends or a SIGINT, SIGTERM or SIGHUP
//! arrives, then unmounts and exits. The experiment starts it; `scripts/fs-vs-c.sh` starts it
//! to give a C program the same file system.

use oscost_measure::experiments::fs::server;
use std::io::Write;
use std::process::ExitCode;

/// The serving role's whole life; `args` are the arguments after the role's name.
pub fn main(args: &[std::ffi::OsString]) -> ExitCode {
    let [dir] = args else {
        eprintln!("usage: oscost {} DIR", server::ROLE);
        return ExitCode::from(2);
    };
    let mounted = match server::mount(std::path::Path::new(dir)) {
        Ok(m) => m,
        Err(e) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}{e}", server::FAILED).and_then(|()| out.flush());
            return ExitCode::from(2);
        }
    };
    let stopper = mounted.stopper();
    let signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]);
    match signals {
        Ok(mut signals) => {
            let spawned = std::thread::Builder::new()
                .name("oscost-fuse-signals".into())
                .spawn(move || {
                    if signals.forever().next().is_some() {
                        stopper.stop();
                    }
                });
            if let Err(e) = spawned {
                eprintln!("oscost: cannot start the signal thread: {e}");
            }
        }
        Err(e) => eprintln!("oscost: cannot install the signal handler: {e}"),
    }
    let input = std::io::BufReader::new(std::io::stdin());
    match mounted.serve(input, std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oscost: the FUSE session ended with an error: {e}");
            ExitCode::from(1)
        }
    }
}

//! The FUSE server of the `fs` experiment: `oscost __fuse-serve DIR` mounts its in-memory file
//! system on DIR and serves it until its standard input ends or a SIGINT, SIGTERM or SIGHUP
//! arrives (which abort its connection first), then unmounts and exits. It dies with the
//! process that started it. The experiment starts it; `cargo xtask vs fs` starts it
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
    // A server whose starter was killed ends with it: nothing else would ever stop it.
    if let Err(e) = oscost_sys::lifetime::die_with_parent(std::os::unix::process::parent_id()) {
        eprintln!("oscost: the FUSE server cannot tie its life to its starter's: {e}");
    }
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
                    // The first stop request aborts the connection (a request waiting on this
                    // server fails at once) and unmounts; the process exits soon after, at
                    // once on a second request.
                    let mut signals = signals.forever();
                    if signals.next().is_some() {
                        stopper.abort();
                        std::thread::spawn(|| {
                            std::thread::sleep(server::STOP_PATIENCE);
                            std::process::exit(0);
                        });
                    }
                    if signals.next().is_some() {
                        std::process::exit(1);
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

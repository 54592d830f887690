//! A throw-away PostgreSQL cluster for tests: `initdb` in a temporary directory (as the
//! `postgres` user when the tests run as root, since the server refuses root), started with
//! `pg_ctl` on a free loopback port and a socket in that directory, stopped and removed on
//! drop. SCRAM-SHA-256 passwords; TLS with a self-signed certificate when `tls` is asked.
#![allow(dead_code)]

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

// The test crate's own `common` says a skip (here and in the top-level tests that use this file).
use crate::common::skip;

/// The password of the cluster's superuser `oscost`.
pub const PASSWORD: &str = "s3cret-pw";

/// A running cluster.
pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    runas: Vec<String>,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
}

/// The directory of `initdb` and `pg_ctl`: on the PATH, else Debian's
/// `/usr/lib/postgresql/<version>/bin`; `None` when PostgreSQL is not installed.
pub fn bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    on_path.or_else(|| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|d| d.join("initdb").is_file())
            .collect();
        dirs.sort();
        dirs.pop()
    })
}

fn run(runas: &[String], program: &Path, args: &[&str]) {
    let mut cmd = if runas.is_empty() {
        Command::new(program)
    } else {
        let mut c = Command::new(&runas[0]);
        c.args(&runas[1..]).arg(program);
        c
    };
    let out = cmd.args(args).output().expect("starting a PostgreSQL tool");
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Gives `dir` to a user other than root (the server refuses root) and returns the command
/// prefix that runs a tool as that user.
fn hand_over(dir: &Path) -> Vec<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let user = ["postgres", "nobody"]
        .into_iter()
        .find(|u| passwd.lines().any(|l| l.starts_with(&format!("{u}:"))))
        .expect("a user other than root to run the server");
    let line = passwd
        .lines()
        .find(|l| l.starts_with(&format!("{user}:")))
        .unwrap();
    let f: Vec<&str> = line.split(':').collect();
    let (uid, gid): (u32, u32) = (f[2].parse().unwrap(), f[3].parse().unwrap());
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).unwrap();
    vec!["runuser".into(), "-u".into(), user.into(), "--".into()]
}

/// Makes the certificates in `data` and refuses any client that does not encrypt; returns the
/// lines to add to postgresql.conf. `own` gives a file to the server's user.
fn tls_only(data: &Path, own: &dyn Fn(&Path)) -> String {
    let (crt, key) = (data.join("server.crt"), data.join("server.key"));
    // A certificate authority of its own, and the server's certificate for `localhost`
    // signed by it.
    let (ca, ca_key, csr, ext) = (
        data.join("ca.crt"),
        data.join("ca.key"),
        data.join("server.csr"),
        data.join("server.ext"),
    );
    std::fs::write(&ext, "subjectAltName=DNS:localhost\n").unwrap();
    let p = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let steps: [Vec<String>; 3] = [
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=oscost-test-ca",
            "-keyout",
            &p(&ca_key),
            "-out",
            &p(&ca),
        ]
        .map(String::from)
        .to_vec(),
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            &p(&key),
            "-out",
            &p(&csr),
        ]
        .map(String::from)
        .to_vec(),
        [
            "x509",
            "-req",
            "-in",
            &p(&csr),
            "-CA",
            &p(&ca),
            "-CAkey",
            &p(&ca_key),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &p(&ext),
            "-out",
            &p(&crt),
        ]
        .map(String::from)
        .to_vec(),
    ];
    for args in steps {
        let out = Command::new("openssl")
            .args(&args)
            .output()
            .expect("openssl makes the test certificates");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    own(&crt);
    own(&key);
    // Only TLS over TCP: a client that does not encrypt is refused.
    let hba = data.join("pg_hba.conf");
    std::fs::write(
        &hba,
        "local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    own(&hba);
    "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n".to_owned()
}

impl Cluster {
    /// Starts a cluster, or `None` when PostgreSQL is not installed: the test returns, counted
    /// as skipped ([`skip`]).
    pub fn start(tls: bool) -> Option<Cluster> {
        let Some(bin) = bin_dir() else {
            skip("needs PostgreSQL's initdb and pg_ctl (apt-get install postgresql)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("oscost-pg-")
            .tempdir()
            .unwrap();
        let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
        let runas = if root {
            hand_over(dir.path())
        } else {
            Vec::new()
        };
        let own = |p: &Path| {
            if root {
                let m = std::fs::metadata(dir.path()).unwrap();
                std::os::unix::fs::chown(p, Some(m.uid()), Some(m.gid())).unwrap();
            }
        };
        let pw = dir.path().join("pw");
        std::fs::write(&pw, PASSWORD).unwrap();
        own(&pw);
        let data = dir.path().join("data");
        run(
            &runas,
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "oscost",
                "--auth=scram-sha-256",
                "--pwfile",
                pw.to_str().unwrap(),
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut conf = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\n\
             fsync = off\nsynchronous_commit = off\n",
            dir.path().display()
        );
        if tls {
            conf += &tls_only(&data, &own);
        }
        let conf_path = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path).unwrap();
        text += &conf;
        std::fs::write(&conf_path, text).unwrap();
        let log = dir.path().join("log");
        run(
            &runas,
            &bin.join("pg_ctl"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-w",
                "-s",
                "start",
            ],
        );
        Some(Cluster {
            dir,
            bin,
            runas,
            port,
        })
    }

    /// The URL of its database `postgres` over TCP, with the password.
    pub fn url(&self) -> String {
        format!(
            "postgres://oscost:{PASSWORD}@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    /// The URL of its database `postgres` through its Unix socket.
    pub fn socket_url(&self) -> String {
        format!(
            "postgres://oscost:{PASSWORD}@/postgres?host={}&port={}",
            self.dir.path().display(),
            self.port
        )
    }

    /// The authority that signed the server's certificate (made with `tls`).
    pub fn certificate(&self) -> PathBuf {
        self.dir.path().join("data/ca.crt")
    }

    /// Creates another database in it, for a test that wants one of its own.
    pub fn create_db(&self, name: &str) -> String {
        let url = oscost_history::PgUrl::parse(&self.socket_url()).unwrap();
        let mut c = oscost_history::pg::Client::connect(&url).unwrap();
        c.batch(&format!("CREATE DATABASE {name}")).unwrap();
        format!(
            "postgres://oscost:{PASSWORD}@127.0.0.1:{}/{name}?sslmode=disable",
            self.port
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let mut cmd = if self.runas.is_empty() {
            Command::new(self.bin.join("pg_ctl"))
        } else {
            let mut c = Command::new(&self.runas[0]);
            c.args(&self.runas[1..]).arg(self.bin.join("pg_ctl"));
            c
        };
        let _ = cmd
            .args([
                "-D",
                data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "-s",
                "stop",
            ])
            .output();
    }
}

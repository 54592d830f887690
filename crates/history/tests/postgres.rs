//! The PostgreSQL store against a real server: a throw-away cluster started for each test
//! (skipped, saying why, only when PostgreSQL's `initdb` and `pg_ctl` are not installed).

mod common;

use common::pgcluster::{Cluster, PASSWORD};
use oscost_history::{History, HistoryError, Location, PgUrl};

fn open(url: &str) -> History {
    History::open_at(&Location::parse(url).unwrap()).unwrap()
}

/// The same runs saved into SQLite and into PostgreSQL read back the same through every
/// operation.
#[test]
fn both_stores_answer_alike() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = History::open(&dir.path().join("h.sqlite3")).unwrap();
    let mut pg = open(&cluster.url());
    let mut docs: Vec<_> = (0..4).map(|n| common::run("alike", n)).collect();
    docs[1].environment.hostname = Some("node-b".into());
    // A figure that is not a number is stored as NULL and reads back as NaN in both.
    docs[2].experiments[0].cases[0].ci95_ns[0] = f64::NAN;
    for d in &docs {
        assert!(lite.save(d).unwrap().new);
        assert!(pg.save(d).unwrap().new);
    }
    let (a, b) = (lite.list().unwrap(), pg.list().unwrap());
    assert_eq!(b.len(), 4);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            (
                &x.run_id,
                &x.started_at,
                &x.hostname,
                &x.kernel,
                &x.cpu_model
            ),
            (
                &y.run_id,
                &y.started_at,
                &y.hostname,
                &y.kernel,
                &y.cpu_model
            )
        );
        assert_eq!(
            (&x.experiments, x.case_count),
            (&y.experiments, y.case_count)
        );
    }
    assert_eq!(b[2].hostname.as_deref(), Some("node-b"));
    for run in ["latest", "latest~2", &docs[0].run_id.clone().unwrap()[..8]] {
        let (x, y) = (lite.resolve(run).unwrap(), pg.resolve(run).unwrap());
        assert_eq!(x, y, "{run}");
        // The document comes back whole from JSONB (keys reordered, numbers exact).
        assert_eq!(pg.get(&y).unwrap(), lite.get(&x).unwrap());
    }
    let (x, y) = (
        lite.trend("example.cost100").unwrap(),
        pg.trend("example.cost100").unwrap(),
    );
    assert_eq!(y.len(), 4);
    for (p, q) in x.iter().zip(&y) {
        assert_eq!(
            (&p.run_id, p.checks_passed, p.env_changed),
            (&q.run_id, q.checks_passed, q.env_changed)
        );
        assert_eq!(p.median_ns.to_bits(), q.median_ns.to_bits());
        assert_eq!(p.ci95_ns[1].to_bits(), q.ci95_ns[1].to_bits());
        assert_eq!(p.ci95_ns[0].is_nan(), q.ci95_ns[0].is_nan());
    }
    assert!(matches!(
        pg.trend("example.nope"),
        Err(HistoryError::UnknownCase { .. })
    ));
    assert!(matches!(
        pg.resolve("latest~9"),
        Err(HistoryError::UnknownRun { .. })
    ));
    pg.remove("latest").unwrap();
    assert_eq!(pg.list().unwrap().len(), 3);
    assert_eq!(pg.trend("example.cost100").unwrap().len(), 3);
}

/// A run pushed twice, from two connections, is stored once.
#[test]
fn a_push_is_idempotent_by_run_id() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let doc = common::run("twice", 7);
    let mut first = open(&cluster.url());
    let mut second = open(&cluster.socket_url());
    assert!(first.save(&doc).unwrap().new);
    let again = second.save(&doc).unwrap();
    assert!(!again.new);
    assert_eq!(Some(again.run_id), doc.run_id);
    assert_eq!(first.list().unwrap().len(), 1);
    assert_eq!(second.trend("example.cost100").unwrap().len(), 1);
    // An oscost/1 document gets its derived id there too.
    let old = oscost_model::read(common::GOLDEN_1).unwrap();
    let a = first.save(&old).unwrap();
    assert!(a.new);
    assert!(!second.save(&old).unwrap().new);
    assert_eq!(a.run_id, oscost_history::derived_run_id(&old).unwrap());
    // Several at once, in one transaction: the one already there is left as it is.
    let batch = [
        common::run("batch", 1),
        doc.clone(),
        common::run("batch", 2),
    ];
    let news: Vec<bool> = first
        .save_all(&batch)
        .unwrap()
        .iter()
        .map(|s| s.new)
        .collect();
    assert_eq!(news, [true, false, true]);
    assert_eq!(second.list().unwrap().len(), 4);
    // A new connection finds the layout in place and migrates nothing.
    assert_eq!(open(&cluster.url()).list().unwrap().len(), 4);
}

/// Errors name the store with its password masked, on one line.
#[test]
fn failures_never_show_the_password() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let wrong = cluster.url().replace(PASSWORD, "not-the-pw");
    let e = History::open_at(&Location::parse(&wrong).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("password authentication failed"), "{e}");
    assert!(e.contains("postgres://oscost:***@127.0.0.1"), "{e}");
    assert!(!e.contains("not-the-pw") && !e.contains('\n'), "{e}");
    // No password at all, where the server asks for one.
    let none = cluster.url().replace(&format!(":{PASSWORD}"), "");
    let e = History::open_at(&Location::parse(&none).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("asks for a password"), "{e}");
    // Nothing listens on the port any more.
    let port = cluster.port;
    drop(cluster);
    let gone = format!("postgres://oscost:{PASSWORD}@127.0.0.1:{port}/postgres");
    let e = History::open_at(&Location::parse(&gone).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot reach the history"), "{e}");
    assert!(!e.contains(PASSWORD), "{e}");
}

/// TLS when the server takes it; certificate checked with `verify-full`; a server that only
/// takes TLS refuses a client that turned it off.
#[test]
fn tls_is_used_when_the_server_offers_it() {
    let Some(cluster) = Cluster::start(true) else {
        return;
    };
    let tcp = format!(
        "postgres://oscost:{PASSWORD}@localhost:{}/postgres",
        cluster.port
    );
    let is_tls = |url: &str| {
        let mut c = oscost_history::pg::Client::connect(&PgUrl::parse(url).unwrap()).unwrap();
        let out = c
            .run(&[(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                vec![],
            )])
            .unwrap();
        out[0].rows[0][0].clone()
    };
    // The default (prefer) and require: encrypted.
    assert_eq!(is_tls(&tcp).as_deref(), Some("t"));
    assert_eq!(
        is_tls(&format!("{tcp}?sslmode=require")).as_deref(),
        Some("t")
    );
    let verified = format!(
        "{tcp}?sslmode=verify-full&sslrootcert={}",
        cluster.certificate().display()
    );
    assert_eq!(is_tls(&verified).as_deref(), Some("t"));
    let mut h = open(&verified);
    assert!(h.save(&common::run("tls", 1)).unwrap().new);
    // The certificate is for `localhost`, not for 127.0.0.1.
    let wrong_name = verified.replace("localhost", "127.0.0.1");
    let e = History::open_at(&Location::parse(&wrong_name).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("TLS failed"), "{e}");
    let plain = format!("{tcp}?sslmode=disable");
    let e = History::open_at(&Location::parse(&plain).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no pg_hba.conf entry"), "{e}");
    assert!(!e.contains(PASSWORD), "{e}");
}

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
    // Rows written out in many TLS records (the socket's writes of several buffers each, cut
    // short where rustls's buffer fills) arrive whole.
    let big: Vec<_> = (2..6).map(|n| common::big_run("tls", n, 3000)).collect();
    assert!(h.save_all(&big).unwrap().iter().all(|s| s.new));
    for d in &big {
        assert_eq!(&h.get(d.run_id.as_deref().unwrap()).unwrap(), d);
    }
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

/// One number from a query, through the crate's own client.
fn count(url: &str, sql: &str) -> i64 {
    let mut c = oscost_history::pg::Client::connect(&PgUrl::parse(url).unwrap()).unwrap();
    let out = c.run(&[(sql, vec![])]).unwrap();
    out[0].rows[0][0].as_deref().unwrap().parse().unwrap()
}

/// A batch goes in by COPY: every row counted, a copy within the batch stored once, each
/// document read back equal, and the batch again adds nothing.
#[test]
fn a_batch_is_copied_in_and_counted_right() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let url = cluster.url();
    let mut pg = open(&url);
    let mut docs: Vec<_> = (1..=40).map(|n| common::run("copy", n)).collect();
    docs[5].environment.hostname = Some("node-\"quoted\"\\".into());
    docs.push(docs[0].clone());
    let saved = pg.save_all(&docs).unwrap();
    assert_eq!(saved.iter().filter(|s| s.new).count(), 40);
    let cases = oscost_history::case_count(&docs[0]) as i64;
    assert_eq!(count(&url, "SELECT count(*) FROM runs"), 40);
    assert_eq!(count(&url, "SELECT count(*) FROM documents"), 40);
    assert_eq!(count(&url, "SELECT count(*) FROM cases"), 40 * cases);
    assert_eq!(
        count(&url, "SELECT count(*) FROM experiments"),
        40 * docs[0].experiments.len() as i64
    );
    assert_eq!(count(&url, "SELECT count(*) FROM run_hosts"), 1);
    assert_eq!(
        count(&url, "SELECT count(*) FROM runs WHERE document IS NULL"),
        40
    );
    for d in &docs[..40] {
        assert_eq!(&pg.get(d.run_id.as_deref().unwrap()).unwrap(), d);
    }
    let hosts: Vec<_> = pg
        .list()
        .unwrap()
        .into_iter()
        .filter_map(|r| r.hostname)
        .collect();
    assert_eq!(hosts, ["node-\"quoted\"\\"]);
    assert!(pg
        .save_all(&docs)
        .unwrap()
        .iter()
        .all(|s| !s.new && !s.differs));
    assert_eq!(count(&url, "SELECT count(*) FROM cases"), 40 * cases);
}

/// The rows written where a document is parsed, sent as one message each, are stored as the
/// values always were: the body is `lz4_flex::compress_prepend_size` of the text byte for byte
/// (under LZ4's 64 KiB table switch and over), the digest that of the text; more messages
/// than one system call takes (1 024 buffers) all arrive.
#[test]
fn documents_are_stored_byte_for_byte_as_before() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let url = cluster.url();
    let mut pg = open(&url);
    let big = serde_json::to_string(&common::big_run("bytes", 1, 600)).unwrap();
    assert!(common::GOLDEN_2.len() < 65_535 && big.len() > 65_535);
    let texts = [common::GOLDEN_2, big.as_str()];
    let encoded: Vec<_> = texts
        .iter()
        .map(|t| oscost_history::Encoded::from_text(t).unwrap())
        .collect();
    let ids: Vec<String> = encoded.iter().map(|e| e.run_id.clone()).collect();
    assert!(pg.save_encoded(&encoded).unwrap().iter().all(|s| s.new));
    let mut c = oscost_history::pg::Client::connect(&PgUrl::parse(&url).unwrap()).unwrap();
    for (id, text) in ids.iter().zip(texts) {
        let out = c
            .run(&[(
                "SELECT encoding, digest, encode(body, 'hex') FROM documents WHERE run_id = $1",
                vec![Some(id.clone())],
            )])
            .unwrap();
        let row = &out[0].rows[0];
        let hex: String = lz4_flex::compress_prepend_size(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(row[0].as_deref(), Some("lz4"));
        assert_eq!(
            row[1].as_deref(),
            Some(oscost_history::digest(text.as_bytes()).as_str())
        );
        assert_eq!(row[2].as_deref(), Some(hex.as_str()), "{id}");
    }
    let many: Vec<_> = (0..1100).map(|n| common::run("many", n)).collect();
    assert!(pg.save_all(&many).unwrap().iter().all(|s| s.new));
    assert_eq!(count(&url, "SELECT count(*) FROM documents"), 1102);
    let cases = oscost_history::case_count(&many[0]) as i64;
    assert_eq!(
        count(&url, "SELECT count(*) FROM cases"),
        1100 * cases
            + oscost_history::case_count(&oscost_model::read(common::GOLDEN_2).unwrap()) as i64
            + oscost_history::case_count(&oscost_model::read(&big).unwrap()) as i64
    );
    assert_eq!(
        &pg.get(many[1099].run_id.as_deref().unwrap()).unwrap(),
        &many[1099]
    );
}

/// A store an older oscost made (schema 2: the document as JSONB in `runs`) is migrated on
/// open: its runs read back whole, new runs go in the current layout beside them, and a run
/// pushed again is known to be the same.
#[test]
fn an_older_postgres_store_is_migrated_and_stays_readable() {
    let Some(cluster) = Cluster::start(false) else {
        return;
    };
    let url = cluster.url();
    let old = common::run("old-layout", 3);
    let id = old.run_id.clone().unwrap();
    {
        let mut c = oscost_history::pg::Client::connect(&PgUrl::parse(&url).unwrap()).unwrap();
        c.batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
             CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT, saved_at TEXT NOT NULL,
                oscost_version TEXT NOT NULL, kernel TEXT NOT NULL, cpu_model TEXT,
                env_fingerprint TEXT NOT NULL, command_line TEXT NOT NULL,
                case_count INTEGER NOT NULL, document JSONB NOT NULL);
             CREATE TABLE experiments (run_id TEXT NOT NULL REFERENCES runs (run_id)
                ON DELETE CASCADE, position INTEGER NOT NULL, name TEXT NOT NULL,
                PRIMARY KEY (run_id, position));
             CREATE TABLE cases (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
                case_id TEXT NOT NULL, experiment TEXT NOT NULL, kind TEXT NOT NULL,
                unit TEXT NOT NULL, median_ns DOUBLE PRECISION, ci_low_ns DOUBLE PRECISION,
                ci_high_ns DOUBLE PRECISION, median_cycles DOUBLE PRECISION, samples INTEGER,
                checks_passed INTEGER NOT NULL, PRIMARY KEY (run_id, case_id));
             CREATE INDEX cases_by_case_id ON cases (case_id);
             CREATE TABLE run_hosts (run_id TEXT PRIMARY KEY REFERENCES runs (run_id)
                ON DELETE CASCADE, hostname TEXT NOT NULL);
             INSERT INTO schema_migrations VALUES (1, 'then'), (2, 'then');",
        )
        .unwrap();
        c.run(&[(
            "INSERT INTO runs VALUES ($1, $2, 'then', 'old', 'k', NULL, 'fp', 'oscost', 1, $3)",
            vec![
                Some(id.clone()),
                old.started_at.clone(),
                Some(serde_json::to_string(&old).unwrap()),
            ],
        )])
        .unwrap();
        c.run(&[(
            "INSERT INTO cases VALUES ($1, 'example.cost100', 'example', 'case', 'op', 1, 1, 1, \
             NULL, 3, 1)",
            vec![Some(id.clone())],
        )])
        .unwrap();
    }
    let mut pg = open(&url);
    assert_eq!(
        count(&url, "SELECT max(version) FROM schema_migrations"),
        oscost_history::SCHEMA_VERSION
    );
    assert_eq!(pg.get(&id).unwrap(), old);
    let new = common::run("new-layout", 4);
    assert!(pg.save(&new).unwrap().new);
    assert_eq!(pg.get(new.run_id.as_deref().unwrap()).unwrap(), new);
    let again = pg.save(&old).unwrap();
    assert!(!again.new && !again.differs, "{again:?}");
    assert_eq!(pg.list().unwrap().len(), 2);
    assert_eq!(pg.trend("example.cost100").unwrap().len(), 2);
    pg.remove(&id).unwrap();
    assert_eq!(count(&url, "SELECT count(*) FROM runs"), 1);
}

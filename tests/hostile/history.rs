//! The history and the documents it reads: stores that are not oscost's, a locked or full
//! one, one another user keeps, documents edited by hand into something silently wrong.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use crate::runner::{case, edited_doc, expect_json, kill, matches, Case};

/// A history of the case's own, outside the working directory, holding one scripted run.
fn with_history(c: &Case) -> PathBuf {
    let hist = c.io.join("h.sqlite");
    c.osc(&[
        Path::new("--history"),
        &hist,
        Path::new("--scripted"),
        Path::new("-q"),
        Path::new("example"),
    ])
    .rc(0);
    hist
}

/// `oscost --history HIST ARGS`.
fn with_hist(hist: &Path, args: &[&str]) -> Vec<std::ffi::OsString> {
    let mut v = vec!["--history".into(), hist.as_os_str().to_owned()];
    v.extend(args.iter().map(Into::into));
    v
}

/// A history command writing over a read-only (0444) file: refused, the file as it was.
fn history_read_only(file: &str, args: &[&str]) {
    case(false, |c| {
        let hist = with_history(c);
        c.write(file, "precious\n");
        std::fs::set_permissions(c.at(file), std::fs::Permissions::from_mode(0o444)).unwrap();
        c.refused("read-only", &with_hist(&hist, args));
    });
}

#[test]
fn history_export_read_only() {
    history_read_only(
        "ro.json",
        &["history", "export", "latest", "--json", "ro.json"],
    );
}

#[test]
fn history_trend_svg_read_only() {
    history_read_only(
        "ro.svg",
        &["history", "trend", "example.cost100", "--svg", "ro.svg"],
    );
}

/// `history trend --svg nodir/`: a missing directory is not a file name.
#[test]
fn history_trend_svg_missing_dir() {
    case(false, |c| {
        let hist = with_history(c);
        let args = with_hist(
            &hist,
            &["history", "trend", "example.cost100", "--svg", "nodir/"],
        );
        c.refused("nodir/: no such directory", &args);
        assert!(!c.at("nodir").exists(), "wrote a file named nodir");
    });
}

/// What kind of history that is not oscost's.
#[derive(Clone, Copy, PartialEq)]
enum NotOurs {
    DevNull,
    /// Another program's database.
    Foreign,
    /// oscost's tables without schema_migrations.
    NoMigrations,
    /// A newer oscost's database, in rollback-journal mode.
    Newer,
}

/// A history that is not oscost's: refused in one line; nothing in or beside it changes.
fn history_not_ours(kind: NotOurs, args: &[&str]) {
    case(false, |c| {
        let filled = |name: &str| {
            let p = c.at(name);
            c.osc(&[
                Path::new("--history"),
                &p,
                Path::new("--scripted"),
                Path::new("-q"),
                Path::new("example"),
            ])
            .rc(0);
            let db = rusqlite::Connection::open(&p).unwrap();
            db.pragma_update(None, "journal_mode", "delete").unwrap();
            (p, db)
        };
        let hist = match kind {
            NotOurs::DevNull => PathBuf::from("/dev/null"),
            NotOurs::Foreign => {
                let p = c.at("other.sqlite");
                rusqlite::Connection::open(&p)
                    .unwrap()
                    .execute("create table t (x)", [])
                    .unwrap();
                p
            }
            NotOurs::NoMigrations => {
                let (p, db) = filled("damaged.sqlite");
                db.execute("drop table schema_migrations", []).unwrap();
                p
            }
            NotOurs::Newer => {
                let (p, db) = filled("newer.sqlite");
                db.execute("insert into schema_migrations values (99, 'x')", [])
                    .unwrap();
                p
            }
        };
        c.refused("", &with_hist(&hist, args));
        assert!(
            !Path::new("/dev/null-journal").exists(),
            "/dev/null-journal exists"
        );
        if kind == NotOurs::Newer {
            let db = rusqlite::Connection::open(&hist).unwrap();
            let mode: String = db
                .pragma_query_value(None, "journal_mode", |r| r.get(0))
                .unwrap();
            assert_eq!(mode, "delete", "the journal mode changed");
        }
    });
}

#[test]
fn history_dev_null() {
    history_not_ours(NotOurs::DevNull, &["--scripted", "example"]);
}

#[test]
fn history_foreign_db_list() {
    history_not_ours(NotOurs::Foreign, &["history", "list"]);
}

#[test]
fn history_foreign_db_run() {
    history_not_ours(NotOurs::Foreign, &["--scripted", "example"]);
}

#[test]
fn history_no_migrations_list() {
    history_not_ours(NotOurs::NoMigrations, &["history", "list"]);
}

#[test]
fn history_no_migrations_run() {
    history_not_ours(NotOurs::NoMigrations, &["--scripted", "example"]);
}

#[test]
fn history_newer_schema_rollback() {
    history_not_ours(NotOurs::Newer, &["history", "list"]);
}

#[test]
fn history_newer_schema_run() {
    history_not_ours(NotOurs::Newer, &["--scripted", "example"]);
}

/// SIGINT while a run waits for another writer's lock on the history: exit 130, not 0, and
/// the result file written.
#[test]
fn history_lock_wait_sigint() {
    case(false, |c| {
        let hist = with_history(c);
        let db = rusqlite::Connection::open(&hist).unwrap();
        db.execute_batch("begin immediate").unwrap();
        let args = with_hist(&hist, &["--scripted", "-q", "example", "--json", "r.json"]);
        let bg = c.spawn_osc(&args);
        // The result file is written before the run is saved: once it is there, the run is at
        // the history, and a moment later waiting for its lock.
        assert!(
            crate::runner::wait_for(30, || c.at("r.json").exists()),
            "no result file in 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
        kill("INT", bg.pid());
        let out = bg.collect();
        drop(db);
        out.rc(130)
            .err_matches("interrupted while waiting for the history");
        expect_json(&c.at("r.json"), "example");
    });
}

/// Mounts a tmpfs of 256 KiB on `dir` and unmounts it when dropped, however the case ends.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: PathBuf) -> Tmpfs {
        std::fs::create_dir(&dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot mount a tmpfs");
        Tmpfs(dir)
    }

    /// Fills what is left of it.
    fn fill(&self) {
        let _ = std::process::Command::new("dd")
            .args(["if=/dev/zero", "bs=4k"])
            .arg(format!("of={}", self.0.join("fill").display()))
            .stderr(std::process::Stdio::null())
            .status();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = std::process::Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.0)
                .status();
        }
    }
}

/// The history on a full file system: a run at the default place goes on, writes its
/// result file and says the run was not saved; a history command fails in one line that names
/// the database.
#[test]
#[ignore = "needs root: mounts a small tmpfs"]
fn history_full_disk() {
    if !common::is_root() {
        return common::skip("needs root: mounting a small tmpfs");
    }
    case(false, |c| {
        let full = Tmpfs::mount(c.io.join("full"));
        let data = full.0.join("data");
        let db = data.join("oscost/history.sqlite3");
        let mut cmd = c.oscost();
        cmd.env("XDG_DATA_HOME", &data)
            .args(["--scripted", "-q", "--no-save", "example"]);
        c.run(&mut cmd);
        std::fs::create_dir_all(data.join("oscost")).unwrap();
        c.osc(&[
            Path::new("--history"),
            &db,
            Path::new("--scripted"),
            Path::new("-q"),
            Path::new("example"),
        ])
        .rc(0);
        full.fill();
        let mut cmd = c.oscost();
        cmd.env("XDG_DATA_HOME", &data)
            .args(["--scripted", "-q", "example", "--json", "r.json"]);
        let out = c.run(&mut cmd);
        out.rc(0)
            .err_matches("history not saved: .*history.sqlite3");
        expect_json(&c.at("r.json"), "example");
        let args = with_hist(&db, &["history", "import", "r.json"]);
        c.osc(&args)
            .rc(2)
            .one_line()
            .err_matches(r"disk full: .*history\.sqlite3");
    });
}

/// The default suite with the history's directory on a full file system: every experiment
/// still runs, the result file and report it keeps itself are given up each with one line,
/// the results go to the temporary directory instead, and the run succeeds.
#[test]
#[ignore = "needs root and slow: mounts a small tmpfs, runs a real --quick suite"]
fn suite_full_disk() {
    if !common::is_root() {
        return common::skip("needs root: mounting a small tmpfs");
    }
    case(true, |c| {
        let full = Tmpfs::mount(c.io.join("fullsuite"));
        let data = full.0.join("data");
        std::fs::create_dir_all(data.join("oscost")).unwrap();
        full.fill();
        let mut cmd = c.oscost();
        cmd.env("XDG_DATA_HOME", &data)
            .env("TMPDIR", &c.io)
            .arg("--quick");
        let out = c.run(&mut cmd);
        out.rc(0).err_matches(r"not kept: .*runs/.*\.json");
        let other = out
            .err
            .lines()
            .find_map(|l| {
                l.strip_prefix("oscost: the run's results are in ")?
                    .strip_suffix(" instead")
            })
            .expect("the results were not written elsewhere");
        let doc: Value = serde_json::from_slice(&std::fs::read(other).unwrap()).unwrap();
        let n = doc["experiments"].as_array().map_or(0, Vec::len);
        assert!(
            n >= 9,
            "the results elsewhere hold {n} experiments, not the whole suite"
        );
        std::fs::remove_file(other).unwrap();
    });
}

/// A history another user keeps in a directory this user cannot write: listed, read only,
/// with nothing made beside it (the WAL database cannot make its shared-memory file there).
#[test]
fn history_readonly_dir() {
    case(false, |c| {
        let dir = c.at("ro");
        std::fs::create_dir(&dir).unwrap();
        let hist = dir.join("h.sqlite");
        c.osc(&[
            Path::new("--scripted"),
            Path::new("-q"),
            Path::new("example"),
            Path::new("--history"),
            &hist,
        ])
        .rc(0);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        std::fs::set_permissions(&hist, std::fs::Permissions::from_mode(0o644)).unwrap();
        if common::is_root() {
            c.nobody();
        }
        let before = crate::runner::snapshot(&dir);
        let out = c.osc(&with_hist(&hist, &["history", "list"]));
        out.rc(0);
        assert!(
            matches("(?m)^1 run in", &out.stdout()),
            "not listed: {}",
            out.err
        );
        let after = crate::runner::snapshot(&dir);
        let names = |s: &crate::runner::Snapshot| s.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&after),
            names(&before),
            "files appeared beside the database"
        );
    });
}

/// One document edited into something silently wrong.
struct Import {
    name: &'static str,
    /// What the one line must match after `bad.json: `.
    re: &'static str,
    edit: fn(&mut Value),
}

/// The first case of the document.
fn case0(d: &mut Value) -> &mut Value {
    &mut d["experiments"][0]["cases"][0]
}

/// Its raw samples three times over.
fn raw_times_3(d: &mut Value) {
    let raw = case0(d)["raw_ns"].as_array().unwrap().clone();
    case0(d)["raw_ns"] = raw.iter().cycle().take(raw.len() * 3).cloned().collect();
}

const IMPORTS: &[Import] = &[
    Import {
        name: "import-impossible-date",
        re: "started_at",
        edit: |d| d["started_at"] = "9999-99-99T99:99:99Z".into(),
    },
    Import {
        name: "import-raw-ns-too-long",
        re: "raw_ns",
        edit: raw_times_3,
    },
    Import {
        name: "import-newline-in-case-id",
        re: r"case `evil\\x0aid\\x1b\[2J` has",
        edit: |d| {
            case0(d)["id"] = "evil\nid\x1b[2J".into();
            raw_times_3(d);
        },
    },
    Import {
        name: "import-negative-time",
        re: r"case `example\.cost100` has median_ns -89120 ns, below zero by more than its loop overhead",
        edit: |d| case0(d)["median_ns"] = (-89120.0).into(),
    },
    Import {
        name: "import-negative-raw-sample",
        re: "has raw_ns -5000000 ns, below zero",
        edit: |d| case0(d)["raw_ns"][3] = (-5e6).into(),
    },
    Import {
        name: "import-nul-character",
        re: r"a NUL character \(\\u0000\) at line 1",
        edit: |d| d["environment"]["cpu_model"] = "CPU\0".into(),
    },
];

/// Silently wrong input refused at import: one line naming the file, nothing saved.
#[test]
fn silently_wrong_documents_are_refused_at_import() {
    crate::runner::table(
        IMPORTS,
        |r| r.name,
        |r| {
            case(false, |c| {
                edited_doc(c, &c.at("bad.json"), r.edit);
                let hist = c.io.join("h.sqlite");
                c.refused(
                    &format!(r"bad\.json: .*{}", r.re),
                    &with_hist(&hist, &["history", "import", "bad.json"]),
                );
            })
        },
    );
}

/// Documents the import refuses are refused by every reader alike (issue 51: a `median_ns` of
/// 1e300 printed a 301-digit headline in the datasheet; a case id given twice): `datasheet`,
/// `compare` and `report` each in one line naming the file.
#[test]
fn inconsistent_documents_are_refused_by_every_reader() {
    // A row's name, what the one line must match after `bad.json: `, and the edit.
    type Row = (&'static str, &'static str, fn(&mut Value));
    let rows: &[Row] = &[
        (
            "median-1e300",
            r"median_ns 1e300 ns, outside its own",
            |d| case0(d)["median_ns"] = 1e300.into(),
        ),
        (
            "case-id-twice",
            r"the id `example\.cost100` is given to two",
            |d| {
                let first = case0(d).clone();
                d["experiments"][0]["cases"]
                    .as_array_mut()
                    .unwrap()
                    .push(first);
            },
        ),
    ];
    crate::runner::table(
        rows,
        |r| r.0,
        |&(_, re, edit)| {
            case(false, |c| {
                edited_doc(c, &c.at("bad.json"), edit);
                edited_doc(c, &c.at("good.json"), |_| {});
                let re = format!(r"bad\.json: .*{re}");
                c.refused(&re, &["datasheet", "bad.json"]);
                c.refused(&re, &["compare", "good.json", "bad.json"]);
                c.refused(&re, &["report", "bad.json", "-o", "bad.html"]);
            })
        },
    );
}

/// A run whose stored document was swapped for another run's (issue 51: `history export`
/// returned the other run's document with exit 0): refused by name on every read.
#[test]
fn history_swapped_document_refused() {
    case(false, |c| {
        let hist = c.io.join("h.sqlite");
        for (name, exp) in [("a.json", "example"), ("b.json", "example-more")] {
            let mut cmd = c.oscost();
            cmd.args(["--scripted", "run", exp, "--json", name, "-q"]);
            cmd.args(with_hist(&hist, &[]));
            c.run(&mut cmd).rc(0);
        }
        let db = rusqlite::Connection::open(&hist).unwrap();
        let ids: Vec<String> = db
            .prepare("SELECT run_id FROM documents ORDER BY run_id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        db.execute_batch(&format!(
            "PRAGMA foreign_keys = OFF;
             UPDATE documents SET run_id = 'x' WHERE run_id = '{a}';
             UPDATE documents SET run_id = '{a}' WHERE run_id = '{b}';
             UPDATE documents SET run_id = '{b}' WHERE run_id = 'x';",
            a = ids[0],
            b = ids[1]
        ))
        .unwrap();
        drop(db);
        let re = format!("run {} in the history cannot be trusted", ids[0]);
        c.refused(&re, &with_hist(&hist, &["history", "export", &ids[0]]));
    });
}

/// The same run with its id in capitals is the same run, not a second one.
#[test]
fn import_uppercase_id_same_run() {
    case(false, |c| {
        let hist = c.io.join("h.sqlite");
        edited_doc(c, &c.at("upper.json"), |d| {
            d["run_id"] = d["run_id"].as_str().unwrap().to_uppercase().into();
        });
        std::fs::copy(c.io.join("r.json"), c.at("lower.json")).unwrap();
        let out = c.osc(&with_hist(
            &hist,
            &["history", "import", "lower.json", "upper.json"],
        ));
        out.rc(0);
        assert!(
            matches("(?m)^already in the history", &out.stdout()),
            "imported as a new run: {}",
            out.stdout()
        );
        let out = c.osc(&with_hist(&hist, &["history", "list"]));
        assert!(
            matches("(?m)^1 run in", &out.stdout()),
            "the history holds: {}",
            out.stdout()
        );
    });
}

/// A document whose run id is stored with other content: refused by name (import and push),
/// never dropped as "already there"; a push goes on past it and names it in its summary.
fn conflicting_content(push: bool) {
    case(false, |c| {
        let hist = c.io.join("h.sqlite");
        // Other content that is still a valid document: an edited sample would contradict
        // the case's median, which is refused when the file is read, before any id is looked at.
        edited_doc(c, &c.at("other.json"), |d| {
            case0(d)["description"] = "edited".into()
        });
        std::fs::copy(c.io.join("r.json"), c.at("same.json")).unwrap();
        c.osc(&with_hist(&hist, &["history", "import", "same.json"]))
            .rc(0);
        let out = if push {
            let to = hist.to_str().unwrap();
            let out = c.osc(&with_hist(
                &hist,
                &["history", "push", "other.json", "same.json", "--to", to],
            ));
            let text = out.stdout();
            assert!(
                matches("(?m)^already there: ", &text),
                "the identical copy was not pushed past: {text}"
            );
            assert!(
                matches(
                    r"1 refused \(another run.s content under a stored id: other.json\)",
                    &text
                ),
                "the summary does not name the refused file: {text}"
            );
            out
        } else {
            c.osc(&with_hist(&hist, &["history", "import", "other.json"]))
        };
        out.rc(2).one_line().err_matches(
            r"other\.json: not stored: run .* is already in the history with other content",
        );
    });
}

#[test]
fn import_same_id_other_content() {
    conflicting_content(false);
}

#[test]
fn push_same_id_other_content() {
    conflicting_content(true);
}

/// A push past a file holding a NUL character (which a PostgreSQL store cannot keep): named
/// with the file before anything is stored, the others pushed, the summary naming what was not.
#[test]
fn push_nul_character_goes_on() {
    case(false, |c| {
        let hist = c.io.join("h.sqlite");
        edited_doc(c, &c.at("nul.json"), |d| {
            d["run_id"] = "00000000-0000-4000-8000-000000000001".into();
            case0(d)["description"] = "a\0b".into();
        });
        std::fs::copy(c.io.join("r.json"), c.at("good.json")).unwrap();
        let to = hist.to_str().unwrap().to_owned();
        let out = c.osc(&with_hist(
            &hist,
            &["history", "push", "nul.json", "good.json", "--to", &to],
        ));
        out.rc(2)
            .one_line()
            .err_matches(r"nul\.json: not a valid oscost/2 document: a NUL character \(\\u0000\) at line 1 column");
        let text = out.stdout();
        assert!(
            matches(r"(?m)^pushed .* \(good\.json\)", &text),
            "the good file was not pushed: {text}"
        );
        let last = text.lines().last().unwrap_or("");
        assert!(
            last.contains("pushed 1, already there 0, 1 not read (not pushed: nul.json)"),
            "the summary does not name the file not pushed: {last}"
        );
    });
}

/// Escape sequences and a right-to-left override in a result file: shown as escapes by
/// history list/show and compare, never sent to the terminal raw.
#[test]
fn hostile_text_not_sent_raw() {
    case(false, |c| {
        let hist = c.io.join("h.sqlite");
        edited_doc(c, &c.at("bad.json"), |d| {
            d["environment"]["cpu_model"] = "CPU\x1b]0;owned\x07\u{202e}evil".into();
            case0(d)["description"] = "op\x1b[2J".into();
        });
        c.osc(&with_hist(&hist, &["history", "import", "bad.json"]))
            .rc(0);
        for cmd in [
            &["history", "list"][..],
            &["history", "show", "latest"],
            &["compare", "bad.json", "bad.json"],
        ] {
            let out = c.osc(&with_hist(&hist, cmd));
            out.rc(0);
            let text = out.stdout();
            let raw = text
                .lines()
                .filter(|l| l.contains('\x1b') || l.contains('\u{202e}'))
                .count();
            assert_eq!(raw, 0, "{cmd:?}: {raw} line(s) carry raw escapes");
            if cmd[1] == "list" {
                assert!(
                    text.contains(r"CPU\x1b]0;owned\x07\u{202e}evil"),
                    "history list does not show the escapes: {text}"
                );
            }
        }
    });
}

/// A Windows agent's ring renamed to Linux's id, beside a Linux run: named, and its row has no
/// ratio or verdict (it would set a Critical Section against a pthread mutex one-for-one).
#[test]
fn compare_windows_case_under_linux_id() {
    case(false, |c| {
        let golden =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/windows-agent-wine.json");
        let w: Value = serde_json::from_slice(&std::fs::read(golden).unwrap()).unwrap();
        let rename = |mut d: Value, id: &str, from: &str, to: &str| {
            d["run_id"] = id.into();
            for e in d["experiments"].as_array_mut().unwrap() {
                for x in e["cases"].as_array_mut().unwrap() {
                    let new = x["id"].as_str().unwrap().replace(from, to);
                    x["id"] = new.into();
                }
            }
            d
        };
        let win = rename(
            w.clone(),
            "3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708194",
            "lockring.cs.n8.",
            "lockring.mutex.n8.",
        );
        let mut lin = rename(
            w,
            "3f1c2b9e-8a4d-4c1e-9b7a-2d5e6f708195",
            "lockring.cs.",
            "lockring.mutex.",
        );
        lin["environment"].as_object_mut().unwrap().remove("os");
        std::fs::write(c.at("win.json"), serde_json::to_vec(&win).unwrap()).unwrap();
        std::fs::write(c.at("lin.json"), serde_json::to_vec(&lin).unwrap()).unwrap();
        let out = c.osc(&["compare", "lin.json", "win.json"]);
        out.rc(0);
        let text = out.stdout();
        assert!(
            matches(
                r"Warning: B \(win\.json\), a run of Windows.*holds lockring\.mutex\.n8\.k1: a pthread mutex.s id",
                &text
            ),
            "the renamed ring is not named: {text}"
        );
        let verdict = text
            .lines()
            .filter(|l| l.starts_with("│ lockring.mutex.n8.k1 "))
            .any(|l| matches("slower|faster|no difference", l));
        assert!(!verdict, "the renamed ring still has a verdict");
    });
}

//! A small synchronous PostgreSQL client: the message codecs and SCRAM of the sans-IO
//! `postgres-protocol` crate over a blocking socket (TCP, TLS through rustls when the server
//! takes it, or a Unix socket), so that no async runtime runs inside a measuring tool.
//! Statements go through the extended query protocol with their parameters apart from the
//! SQL; values travel as text, which the server reads as the column's type.

use bytes::BytesMut;
use fallible_iterator::FallibleIterator as _;
use postgres_protocol::authentication::sasl::{self, ChannelBinding, ScramSha256};
use postgres_protocol::message::{backend, frontend};
use postgres_protocol::IsNull;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod copy;

/// How long connecting, and then each read or write, may take before the store is called
/// unreachable.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Where the Unix socket of a server on this machine is looked for when the URL names no host.
const SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// Whether and how TLS is used, as libpq's `sslmode` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never.
    Disable,
    /// When the server takes it (the default), without checking its certificate.
    Prefer,
    /// Always, without checking the certificate.
    Require,
    /// Always, with the certificate checked against the trusted roots and the host name.
    VerifyFull,
}

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Tcp(String),
    /// A directory holding the server's socket `.s.PGSQL.<port>`.
    Socket(PathBuf),
}

/// A parsed `postgres://` URL. Its `Debug` and [`PgUrl::shown`] never hold the password.
#[derive(Clone)]
pub struct PgUrl {
    user: String,
    password: Option<String>,
    host: Host,
    port: u16,
    dbname: String,
    sslmode: SslMode,
    sslrootcert: Option<PathBuf>,
    shown: String,
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Why a PostgreSQL store could not be used: one line, never the password.
#[derive(Debug, Clone)]
pub struct PgError(pub String);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(text: impl Into<String>) -> PgError {
    PgError(text.into())
}

/// `%XX` escapes decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A URL's authority (`user:password@host:port`) and the path after it (from its `/`). The
/// authority runs to the last `@` and then to the next `/`: a password holding a `/` that was
/// not percent-escaped is still read, and masked, as the password.
fn split_authority(main: &str) -> (&str, &str) {
    let host_from = main.rfind('@').map_or(0, |i| i + 1);
    match main[host_from..].find('/') {
        Some(i) => main.split_at(host_from + i),
        None => (main, ""),
    }
}

/// `text` with the password of every `postgres://` URL in it masked (`user:***@`,
/// `password=***`): for what oscost records or shows of its own command line.
pub fn mask_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = ["postgres://", "postgresql://"]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, p.len())))
        .min()
    {
        let (start, scheme) = at;
        out.push_str(&rest[..start + scheme]);
        rest = &rest[start + scheme..];
        let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        let (url, after) = rest.split_at(end);
        let (main, query) = match url.split_once('?') {
            Some((m, q)) => (m, Some(q)),
            None => (url, None),
        };
        let (authority, path) = split_authority(main);
        match authority.rsplit_once('@') {
            Some((userinfo, host)) => {
                let user = userinfo.split(':').next().unwrap_or_default();
                out.push_str(user);
                if userinfo.contains(':') {
                    out.push_str(":***");
                }
                out.push('@');
                out.push_str(host);
            }
            None => out.push_str(authority),
        }
        out.push_str(path);
        if let Some(q) = query {
            out.push('?');
            let pairs: Vec<String> = q
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some(("password", _)) => "password=***".to_owned(),
                    _ => p.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Whether `s` names a PostgreSQL store.
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

impl PgUrl {
    /// Reads `postgres://[user[:password]@][host][:port][/dbname][?param=value&...]`, with
    /// the parameters `host` (a socket directory when it starts with `/`), `port`, `user`,
    /// `password`, `dbname`, `sslmode` (`disable`, `prefer`, `require`, `verify-full`) and
    /// `sslrootcert`. What the URL leaves out comes from `PGUSER`, `PGPASSWORD`, `PGHOST`,
    /// `PGPORT` and `PGDATABASE`, as libpq does.
    pub fn parse(url: &str) -> Result<PgUrl, PgError> {
        let rest = url
            .strip_prefix("postgresql://")
            .or_else(|| url.strip_prefix("postgres://"))
            .ok_or_else(|| err("a PostgreSQL URL starts with postgres:// or postgresql://"))?;
        let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = split_authority(main);
        let path = path.strip_prefix('/').unwrap_or(path);
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let bad = |what: &str| err(format!("the URL's {what} is malformed (percent-escape it)"));
        let dec = |s: &str, what: &str| percent_decode(s).ok_or_else(|| bad(what));
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (mut user, mut password) = (None, None);
        if let Some(u) = userinfo {
            let (name, pw) = match u.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (u, None),
            };
            if !name.is_empty() {
                user = Some(dec(name, "user")?);
            }
            if let Some(p) = pw {
                password = Some(dec(p, "password")?);
            }
        }
        // `[::1]:5432`, `host:5432`, `host`, or nothing.
        let (mut host, mut port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("host"))?;
            (
                Some(h.to_owned()),
                after.strip_prefix(':').map(str::to_owned),
            )
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (Some(dec(h, "host")?), Some(p.to_owned())),
                None => (Some(dec(hostport, "host")?), None),
            }
        };
        host = host.filter(|h| !h.is_empty());
        let mut dbname = Some(dec(path, "database name")?).filter(|d| !d.is_empty());
        let mut sslmode = None;
        let mut sslrootcert = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = dec(v, k)?;
            match k {
                "host" => host = Some(v),
                "port" => port = Some(v),
                "user" => user = Some(v),
                "password" => password = Some(v),
                "dbname" => dbname = Some(v),
                "sslmode" => sslmode = Some(v),
                "sslrootcert" => sslrootcert = Some(PathBuf::from(v)),
                // Harmless for a client that sends no application name or timeout of its own.
                "application_name" | "connect_timeout" => {}
                other => {
                    return Err(err(format!(
                        "the URL parameter `{other}` is not one oscost reads (it reads host, \
                         port, user, password, dbname, sslmode, sslrootcert)"
                    )))
                }
            }
        }
        let user = user
            .or_else(|| env("PGUSER"))
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
            .ok_or_else(|| err("the URL names no user (postgres://USER@HOST/DB)"))?;
        let password = password.or_else(|| env("PGPASSWORD"));
        let port_text = port
            .filter(|p| !p.is_empty())
            .or_else(|| env("PGPORT"))
            .unwrap_or_else(|| "5432".into());
        let port: u16 = port_text.parse().map_err(|_| {
            err(format!(
                "the URL's port `{port_text}` is not a number from 1 to 65535"
            ))
        })?;
        let host = match host.or_else(|| env("PGHOST")) {
            Some(h) if h.starts_with('/') => Host::Socket(PathBuf::from(h)),
            Some(h) => Host::Tcp(h),
            None => SOCKET_DIRS
                .iter()
                .map(PathBuf::from)
                .find(|d| d.join(format!(".s.PGSQL.{port}")).exists())
                .map(Host::Socket)
                .unwrap_or_else(|| Host::Tcp("localhost".into())),
        };
        let dbname = dbname
            .or_else(|| env("PGDATABASE"))
            .unwrap_or_else(|| user.clone());
        let sslmode = match sslmode.or_else(|| env("PGSSLMODE")).as_deref() {
            None | Some("prefer") | Some("allow") => SslMode::Prefer,
            Some("disable") => SslMode::Disable,
            Some("require") => SslMode::Require,
            Some("verify-full") => SslMode::VerifyFull,
            Some(other) => {
                return Err(err(format!(
                    "sslmode `{other}` is not one oscost knows (disable, prefer, require, \
                     verify-full)"
                )))
            }
        };
        let place = match &host {
            Host::Tcp(h) if h.contains(':') => format!("[{h}]:{port}"),
            Host::Tcp(h) => format!("{h}:{port}"),
            Host::Socket(d) => format!("{}:{port}", d.display()),
        };
        let shown = format!(
            "postgres://{user}{}@{place}/{dbname}",
            if password.is_some() { ":***" } else { "" }
        );
        Ok(PgUrl {
            user,
            password,
            host,
            port,
            dbname,
            sslmode,
            sslrootcert,
            shown,
        })
    }

    /// The URL as messages show it: the password masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    // Many buffers in one system call: a COPY's rows go out from where they were written.
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
            // StreamOwned has no write_vectored of its own (the default would take one buffer
            // a call); the borrowed Stream has, encrypting them into one record where it can.
            Stream::Tls(s) => {
                let s = &mut **s;
                rustls::Stream::new(&mut s.conn, &mut s.sock).write_vectored(bufs)
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A row of text values (`None` for NULL).
pub type Row = Vec<Option<String>>;

/// What one statement gave: its rows and, for a write, how many rows it touched.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The rows it returned.
    pub rows: Vec<Row>,
    /// The count of its command tag (`INSERT 0 1` → 1).
    pub affected: u64,
}

/// An open connection.
pub struct Client {
    stream: Stream,
    input: BytesMut,
    output: BytesMut,
    /// Statements prepared on this connection, by SQL.
    prepared: HashMap<String, String>,
    /// Statement names given so far: each name is used once.
    names: u64,
    shown: String,
}

impl Client {
    /// Connects and authenticates (trust, password, MD5 or SCRAM-SHA-256), over TLS when
    /// `sslmode` asks for it and the server takes it.
    pub fn connect(url: &PgUrl) -> Result<Client, PgError> {
        let shown = url.shown.clone();
        let unreachable = |e: std::io::Error| {
            err(format!(
                "cannot reach the history at {shown}: {e} (is the server running, and the URL \
                 right?)"
            ))
        };
        let stream = match &url.host {
            Host::Socket(dir) => {
                let path = dir.join(format!(".s.PGSQL.{}", url.port));
                let s = UnixStream::connect(&path).map_err(unreachable)?;
                s.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
                s.set_write_timeout(Some(TIMEOUT)).map_err(unreachable)?;
                Stream::Unix(s)
            }
            Host::Tcp(h) => {
                use std::net::ToSocketAddrs as _;
                let addrs: Vec<_> = (h.as_str(), url.port)
                    .to_socket_addrs()
                    .map_err(unreachable)?
                    .collect();
                let mut last = None;
                let mut tcp = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, TIMEOUT) {
                        Ok(s) => {
                            tcp = Some(s);
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                let tcp = match (tcp, last) {
                    (Some(s), _) => s,
                    (None, Some(e)) => return Err(unreachable(e)),
                    (None, None) => {
                        return Err(unreachable(std::io::Error::other(
                            "no address for the host",
                        )))
                    }
                };
                tcp.set_read_timeout(Some(TIMEOUT)).map_err(unreachable)?;
                tcp.set_write_timeout(Some(TIMEOUT)).map_err(unreachable)?;
                let _ = tcp.set_nodelay(true);
                start_tls(tcp, url, h).map_err(|e| err(format!("{shown}: {e}")))?
            }
        };
        let mut client = Client {
            stream,
            input: BytesMut::with_capacity(8192),
            output: BytesMut::with_capacity(8192),
            prepared: HashMap::new(),
            names: 0,
            shown,
        };
        client.startup(url)?;
        Ok(client)
    }

    fn io(&self, e: std::io::Error) -> PgError {
        if let Some(silent) = no_answer(&e) {
            return err(format!("{}: {silent}", self.shown));
        }
        err(format!(
            "the connection to {} failed: {e} (is the server still running?)",
            self.shown
        ))
    }

    fn send(&mut self) -> Result<(), PgError> {
        let out = std::mem::take(&mut self.output);
        let r = self
            .stream
            .write_all(&out)
            .and_then(|_| self.stream.flush());
        self.output = out;
        self.output.clear();
        r.map_err(|e| self.io(e))
    }

    fn receive(&mut self) -> Result<backend::Message, PgError> {
        loop {
            match backend::Message::parse(&mut self.input) {
                Ok(Some(m)) => return Ok(m),
                Ok(None) => {}
                Err(e) => return Err(self.io(e)),
            }
            let mut chunk = [0u8; 16384];
            let n = self.stream.read(&mut chunk).map_err(|e| self.io(e))?;
            if n == 0 {
                return Err(self.io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                )));
            }
            self.input.extend_from_slice(&chunk[..n]);
        }
    }

    fn startup(&mut self, url: &PgUrl) -> Result<(), PgError> {
        let params = [
            ("user", url.user.as_str()),
            ("database", url.dbname.as_str()),
            ("client_encoding", "UTF8"),
            ("application_name", "oscost"),
        ];
        frontend::startup_message(params.iter().copied(), &mut self.output)
            .map_err(|e| self.io(e))?;
        self.send()?;
        let need_password = || {
            err(format!(
                "{} asks for a password and the URL gives none (put it in the URL held by \
                 OSCOST_HISTORY_FILE, or in PGPASSWORD)",
                url.shown
            ))
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.receive()? {
                backend::Message::AuthenticationOk => {}
                backend::Message::AuthenticationCleartextPassword => {
                    let pw = url.password.as_deref().ok_or_else(need_password)?;
                    frontend::password_message(pw.as_bytes(), &mut self.output)
                        .map_err(|e| self.io(e))?;
                    self.send()?;
                }
                backend::Message::AuthenticationMd5Password(body) => {
                    let pw = url.password.as_deref().ok_or_else(need_password)?;
                    let hash = postgres_protocol::authentication::md5_hash(
                        url.user.as_bytes(),
                        pw.as_bytes(),
                        body.salt(),
                    );
                    frontend::password_message(hash.as_bytes(), &mut self.output)
                        .map_err(|e| self.io(e))?;
                    self.send()?;
                }
                backend::Message::AuthenticationSasl(body) => {
                    let pw = url.password.as_deref().ok_or_else(need_password)?;
                    let mut mechanisms = body.mechanisms();
                    let mut found = false;
                    while let Some(m) = mechanisms.next().map_err(|e| self.io(e))? {
                        found |= m == sasl::SCRAM_SHA_256;
                    }
                    if !found {
                        return Err(err(format!(
                            "{} offers no SASL mechanism oscost speaks (it speaks SCRAM-SHA-256)",
                            url.shown
                        )));
                    }
                    // Channel binding is not offered, so a server that insists on it refuses.
                    let s = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
                    frontend::sasl_initial_response(
                        sasl::SCRAM_SHA_256,
                        s.message(),
                        &mut self.output,
                    )
                    .map_err(|e| self.io(e))?;
                    self.send()?;
                    scram = Some(s);
                }
                backend::Message::AuthenticationSaslContinue(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| err("the server's SCRAM exchange is out of order"))?;
                    s.update(body.data()).map_err(|e| {
                        err(format!("{}: SCRAM authentication failed: {e}", url.shown))
                    })?;
                    frontend::sasl_response(s.message(), &mut self.output)
                        .map_err(|e| self.io(e))?;
                    self.send()?;
                }
                backend::Message::AuthenticationSaslFinal(body) => {
                    let s = scram
                        .as_mut()
                        .ok_or_else(|| err("the server's SCRAM exchange is out of order"))?;
                    s.finish(body.data()).map_err(|e| {
                        err(format!(
                            "{}: the server failed SCRAM's proof of its identity: {e}",
                            url.shown
                        ))
                    })?;
                }
                backend::Message::ErrorResponse(body) => {
                    return Err(err(format!("{}: {}", url.shown, error_text(&body))))
                }
                backend::Message::ReadyForQuery(_) => return Ok(()),
                backend::Message::ParameterStatus(_)
                | backend::Message::BackendKeyData(_)
                | backend::Message::NoticeResponse(_) => {}
                _ => {
                    return Err(err(format!(
                        "{} asks for an authentication oscost does not speak (it speaks \
                         password, md5 and scram-sha-256)",
                        url.shown
                    )))
                }
            }
        }
    }

    /// Runs statements one after another in one exchange with the server (one round trip),
    /// each with its text parameters; stops at the first error, which is returned. Outside an
    /// explicit transaction the statements form one of their own.
    pub fn run(
        &mut self,
        statements: &[(&str, Vec<Option<String>>)],
    ) -> Result<Vec<Outcome>, PgError> {
        let mut fresh = Vec::new();
        for (sql, params) in statements {
            let name = match self.prepared.get(*sql) {
                Some(n) => n.clone(),
                None => {
                    self.names += 1;
                    let n = format!("s{}", self.names);
                    frontend::parse(&n, sql, std::iter::empty(), &mut self.output)
                        .map_err(|e| self.io(e))?;
                    fresh.push((sql.to_string(), n.clone()));
                    // Later statements of this exchange reuse it.
                    self.prepared.insert(sql.to_string(), n.clone());
                    n
                }
            };
            let bound = frontend::bind(
                "",
                &name,
                std::iter::once(0i16),
                params.iter(),
                |v: &Option<String>, buf: &mut BytesMut| match v {
                    Some(s) => {
                        buf.extend_from_slice(s.as_bytes());
                        Ok(IsNull::No)
                    }
                    None => Ok(IsNull::Yes),
                },
                std::iter::once(0i16),
                &mut self.output,
            );
            if bound.is_err() {
                return Err(err("a statement's parameters could not be encoded"));
            }
            frontend::execute("", 0, &mut self.output).map_err(|e| self.io(e))?;
        }
        frontend::sync(&mut self.output);
        self.send()?;
        let mut outcomes = Vec::new();
        let mut current = Outcome::default();
        let mut failure = None;
        loop {
            match self.receive()? {
                backend::Message::DataRow(body) => {
                    let buf = body.buffer();
                    let row = body
                        .ranges()
                        .map(|r| Ok(r.map(|r| String::from_utf8_lossy(&buf[r]).into_owned())))
                        .collect::<Vec<_>>()
                        .map_err(|e| self.io(e))?;
                    current.rows.push(row);
                }
                backend::Message::CommandComplete(body) => {
                    let tag = body.tag().unwrap_or_default();
                    current.affected = tag
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    outcomes.push(std::mem::take(&mut current));
                }
                backend::Message::EmptyQueryResponse => {
                    outcomes.push(std::mem::take(&mut current));
                }
                backend::Message::ErrorResponse(body) => {
                    failure = Some(error_text(&body));
                }
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(why) = failure {
            // A statement of this exchange may have been skipped by the error, so never
            // prepared: prepared again next time, under a new name (any that was prepared
            // stays on the server, unused, until the connection ends).
            for (sql, _) in &fresh {
                self.prepared.remove(sql);
            }
            return Err(err(format!("{}: {why}", self.shown)));
        }
        Ok(outcomes)
    }

    /// Runs SQL without parameters through the simple protocol (several statements allowed).
    pub fn batch(&mut self, sql: &str) -> Result<(), PgError> {
        frontend::query(sql, &mut self.output).map_err(|e| self.io(e))?;
        self.send()?;
        let mut failure = None;
        loop {
            match self.receive()? {
                backend::Message::ErrorResponse(body) => failure = Some(error_text(&body)),
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match failure {
            Some(why) => Err(err(format!("{}: {why}", self.shown))),
            None => Ok(()),
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        frontend::terminate(&mut self.output);
        let _ = self.send();
    }
}

/// The server's message and its hint, on one line.
fn error_text(body: &backend::ErrorResponseBody) -> String {
    let mut message = String::new();
    let mut hint = String::new();
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'H' => hint = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    if hint.is_empty() {
        message
    } else {
        format!("{message} ({hint})")
    }
}

/// A read or write past the socket's timeout fails as EAGAIN ("Resource temporarily
/// unavailable"), which names neither the wait nor the fix: this says both.
fn no_answer(e: &std::io::Error) -> Option<String> {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
    .then(|| {
        format!(
            "no answer within {} s (is a PostgreSQL server listening there, and not stuck? \
             check the URL's host and port)",
            TIMEOUT.as_secs()
        )
    })
}

/// Why a step of the TLS start failed, in words.
fn tls_io(e: std::io::Error) -> String {
    no_answer(&e).unwrap_or_else(|| e.to_string())
}

/// Asks the server for TLS unless `sslmode=disable`, and wraps the socket when it says yes.
fn start_tls(mut tcp: TcpStream, url: &PgUrl, host: &str) -> Result<Stream, String> {
    if url.sslmode == SslMode::Disable {
        return Ok(Stream::Tcp(tcp));
    }
    let mut buf = BytesMut::new();
    frontend::ssl_request(&mut buf);
    tcp.write_all(&buf).map_err(tls_io)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).map_err(tls_io)?;
    if answer[0] != b'S' {
        return match url.sslmode {
            SslMode::Prefer => Ok(Stream::Tcp(tcp)),
            _ => Err(
                "the server does not take TLS, which sslmode asks for (sslmode=prefer \
                      goes on without it)"
                    .into(),
            ),
        };
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = if url.sslmode == SslMode::VerifyFull {
        let roots = trusted_roots(url.sslrootcert.as_deref())?;
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        // As libpq's `prefer` and `require`: encrypted, the certificate not checked.
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
            .with_no_client_auth()
    };
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| format!("`{host}` cannot be checked against a certificate: {e}"))?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    // The handshake now, so that a certificate refused says so before anything else.
    while tls.conn.is_handshaking() {
        tls.conn
            .complete_io(&mut tls.sock)
            .map_err(|e| format!("TLS failed: {}", tls_io(e)))?;
    }
    Ok(Stream::Tls(Box::new(tls)))
}

/// The roots `verify-full` trusts: the `sslrootcert` file, else the system's bundle.
fn trusted_roots(file: Option<&std::path::Path>) -> Result<rustls::RootCertStore, String> {
    use rustls::pki_types::pem::PemObject as _;
    let path = file.map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(
            std::env::var("SSL_CERT_FILE")
                .unwrap_or_else(|_| "/etc/ssl/certs/ca-certificates.crt".into()),
        )
    });
    let mut roots = rustls::RootCertStore::empty();
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(&path).map_err(|e| {
        format!(
            "cannot read the trusted certificates {}: {e}",
            path.display()
        )
    })?;
    for c in certs {
        let c = c.map_err(|e| format!("{}: {e}", path.display()))?;
        roots
            .add(c)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "{} holds no certificate (give sslrootcert=FILE in the URL)",
            path.display()
        ));
    }
    Ok(roots)
}

/// The verifier of `sslmode=prefer` and `require`: signatures are checked, the certificate's
/// issuer and name are not, as libpq does in those modes.
#[derive(Debug)]
struct Unchecked(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_read_and_shown_without_its_password() {
        let u =
            PgUrl::parse("postgres://ann:s%3Acret@db.example:6543/runs?sslmode=require").unwrap();
        assert_eq!(u.user, "ann");
        assert_eq!(u.password.as_deref(), Some("s:cret"));
        assert_eq!(u.host, Host::Tcp("db.example".into()));
        assert_eq!(u.port, 6543);
        assert_eq!(u.dbname, "runs");
        assert_eq!(u.sslmode, SslMode::Require);
        assert_eq!(u.shown(), "postgres://ann:***@db.example:6543/runs");
        assert!(!format!("{u:?}").contains("cret"));
    }

    #[test]
    fn passwords_in_text_are_masked() {
        assert_eq!(
            mask_passwords("--history=postgres://ann:pw@h:1/db?password=x&sslmode=require y"),
            "--history=postgres://ann:***@h:1/db?password=***&sslmode=require y"
        );
        assert_eq!(
            mask_passwords("postgresql://ann@h/db and postgres://b:c@d"),
            "postgresql://ann@h/db and postgres://b:***@d"
        );
        assert_eq!(mask_passwords("/var/lib/h.sqlite3"), "/var/lib/h.sqlite3");
        // A `/` in a password someone forgot to escape (base64 has them) is still masked.
        assert_eq!(
            mask_passwords("postgres://ann:pa/ss+w@h:1/db"),
            "postgres://ann:***@h:1/db"
        );
    }

    #[test]
    fn an_unescaped_slash_stays_in_the_password() {
        let u = PgUrl::parse("postgres://ann:pa/ss@h:7/db").unwrap();
        assert_eq!(u.password.as_deref(), Some("pa/ss"));
        assert_eq!((u.port, u.dbname.as_str()), (7, "db"));
        assert_eq!(u.shown(), "postgres://ann:***@h:7/db");
    }

    #[test]
    fn a_socket_directory_is_a_host() {
        let u = PgUrl::parse("postgresql://bob@/h?host=/tmp/pg&port=5433").unwrap();
        assert_eq!(u.host, Host::Socket("/tmp/pg".into()));
        assert_eq!(u.port, 5433);
        assert_eq!(u.shown(), "postgres://bob@/tmp/pg:5433/h");
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_password() {
        for (url, says) in [
            ("postgres://a:pw@h:99999/d", "port"),
            ("postgres://a:pw@h/d?sslmode=maybe", "sslmode"),
            ("postgres://a:pw@h/d?colour=red", "colour"),
            ("postgres://a:p%zzw@h/d", "password"),
        ] {
            let e = PgUrl::parse(url).unwrap_err().0;
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains("pw"), "{url}: {e}");
        }
    }
}

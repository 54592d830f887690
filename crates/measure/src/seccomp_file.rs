//! A seccomp profile file in Docker's JSON format: read, checked, named by its content's
//! digest, and compiled for this machine. The one reader of profile files: `bill --under`,
//! `bill show --predict-under` and the `seccomp` experiment's `--profile` all come here, so
//! the digest a measured price is filed under is the one a prediction looks it up by.

use oscost_model::seccomp_profile::DockerProfile;
use oscost_sys::seccomp::{Compiled, Program};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A profile file, read and checked.
#[derive(Debug, Clone)]
pub struct ProfileFile {
    /// Where it was read from, as given.
    pub path: PathBuf,
    /// The SHA-256 of its bytes, in hex: what a measured price of it is filed under.
    pub digest: String,
    /// Its rules.
    pub profile: DockerProfile,
}

impl ProfileFile {
    /// Reads and checks `path`; the error names the file and what is wrong with it.
    pub fn read(path: &Path) -> anyhow::Result<ProfileFile> {
        let shown = path.display();
        let bytes = std::fs::read(path).map_err(|e| {
            // The OS's words, without the "(os error N)" the user cannot act on.
            let words = e.to_string();
            let words = words.split(" (os error").next().unwrap_or_default();
            anyhow::anyhow!("seccomp profile {shown}: cannot read it: {words}")
        })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| anyhow::anyhow!("seccomp profile {shown}: not UTF-8 text"))?;
        let profile = oscost_model::seccomp_profile::parse(text).map_err(|e| {
            anyhow::anyhow!("seccomp profile {shown}: not a profile in Docker's format: {e}")
        })?;
        Ok(ProfileFile {
            path: path.to_owned(),
            digest: digest(&bytes),
            profile,
        })
    }

    /// The file's name without its directories, for ids and lines.
    pub fn file_name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into(),
        )
    }

    /// The first twelve hex digits of the digest, as lines show it.
    pub fn short_digest(&self) -> &str {
        &self.digest[..12]
    }

    /// Compiled for this machine (its architecture, this process's capabilities, the running
    /// kernel); the error names the file.
    pub fn compile(&self) -> anyhow::Result<Compiled> {
        Program::from_docker(&self.profile, &oscost_sys::seccomp::this_machine()).map_err(|e| {
            anyhow::anyhow!(
                "seccomp profile {}: cannot be installed: {e}",
                self.path.display()
            )
        })
    }
}

/// The SHA-256 of `bytes` in lower-case hex.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_named_by_digest_and_refused_in_one_line() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/seccomp/small.json");
        let f = ProfileFile::read(&fixture).unwrap();
        assert_eq!(f.file_name(), "small.json");
        assert_eq!(f.digest.len(), 64);
        assert_eq!(f.digest, digest(&std::fs::read(&fixture).unwrap()));
        assert!(f.compile().unwrap().program.len() > 10);
        assert_eq!(
            digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"]}]}"#,
        )
        .unwrap();
        let e = format!("{:#}", ProfileFile::read(&bad).unwrap_err());
        assert!(
            e.starts_with(&format!("seccomp profile {}: ", bad.display())),
            "{e}"
        );
        assert!(
            e.contains("missing field `action`") && !e.contains('\n'),
            "{e}"
        );
        let e = format!(
            "{:#}",
            ProfileFile::read(&dir.path().join("none.json")).unwrap_err()
        );
        assert!(
            e.ends_with("none.json: cannot read it: No such file or directory"),
            "{e}"
        );
    }
}

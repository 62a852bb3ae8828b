//! The limits on what sources read and write on this machine, one setting
//! for every kind of source: local input files only from under the input
//! roots (after `..` and symbolic links are resolved), outputs only into
//! the output folder, under names the gateway makes, never overwriting.

use std::path::{Path, PathBuf};

/// A file the sandbox refused or could not read or write; the message says
/// what to change and names the setting.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct FileError(String);

/// How the user's configuration names the sandbox's settings, so messages
/// point at the key to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxKeys {
    pub input_roots: String,
    pub output_dir: String,
    pub max_input_bytes: String,
}

impl Default for SandboxKeys {
    fn default() -> Self {
        Self {
            input_roots: "input_roots".to_owned(),
            output_dir: "output_dir".to_owned(),
            max_input_bytes: "max_input_bytes".to_owned(),
        }
    }
}

/// Input and output file rules.
#[derive(Debug, Clone)]
pub struct Sandbox {
    roots: Vec<PathBuf>,
    output_dir: PathBuf,
    max_input_bytes: u64,
    keys: SandboxKeys,
}

impl Sandbox {
    /// `roots` empty: no local file may be read.
    pub fn new(roots: Vec<PathBuf>, output_dir: PathBuf, max_input_bytes: u64) -> Self {
        Self {
            roots,
            output_dir,
            max_input_bytes,
            keys: SandboxKeys::default(),
        }
    }

    pub fn with_keys(mut self, keys: SandboxKeys) -> Self {
        self.keys = keys;
        self
    }

    pub fn input_roots(&self) -> &[PathBuf] {
        &self.roots
    }

    pub fn output_dir(&self) -> &Path {
        &self.output_dir
    }

    pub fn max_input_bytes(&self) -> u64 {
        self.max_input_bytes
    }

    /// Reads a local file that lies under one of the input roots (after
    /// resolving `..` and symlinks), within the size cap.
    pub async fn read_input(&self, path: &str) -> Result<Vec<u8>, FileError> {
        let keys = &self.keys;
        if self.roots.is_empty() {
            return Err(FileError(format!(
                "Reading local files is off: pass the content as base64, or list the folder in {}.",
                keys.input_roots
            )));
        }
        let real = tokio::fs::canonicalize(path)
            .await
            .map_err(|e| FileError(format!("Cannot open `{path}`: {e}.")))?;
        let mut allowed = false;
        for root in &self.roots {
            if let Ok(r) = tokio::fs::canonicalize(root).await {
                if real.starts_with(&r) {
                    allowed = true;
                    break;
                }
            }
        }
        if !allowed {
            return Err(FileError(format!(
                "`{path}` is outside the folders files may be read from ({}: {}).",
                keys.input_roots,
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let meta = tokio::fs::metadata(&real)
            .await
            .map_err(|e| FileError(format!("Cannot open `{path}`: {e}.")))?;
        if !meta.is_file() {
            return Err(FileError(format!("`{path}` is not a file.")));
        }
        if meta.len() > self.max_input_bytes {
            return Err(FileError(format!(
                "`{path}` is {} bytes, over the limit of {} bytes ({}).",
                meta.len(),
                self.max_input_bytes,
                keys.max_input_bytes
            )));
        }
        // The resolved path is read, so a link swapped in after the check
        // cannot lead elsewhere than the file that was checked.
        tokio::fs::read(&real)
            .await
            .map_err(|e| FileError(format!("Cannot read `{path}`: {e}.")))
    }

    /// Writes bytes to a new file in the output folder, named from `stem`
    /// (cleaned) and `ext`; never overwrites.
    pub async fn write_output(
        &self,
        stem: &str,
        ext: &str,
        bytes: &[u8],
    ) -> Result<PathBuf, FileError> {
        let clean: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .take(48)
            .collect();
        let clean = if clean.trim_matches('-').is_empty() {
            "output".to_owned()
        } else {
            clean
        };
        let ext: String = ext
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(8)
            .collect();
        let unwritable = |e: std::io::Error, what: &str| {
            FileError(format!(
                "Cannot {what} the output folder `{}`: {e}. Set {} to a writable folder.",
                self.output_dir.display(),
                self.keys.output_dir
            ))
        };
        tokio::fs::create_dir_all(&self.output_dir)
            .await
            .map_err(|e| unwritable(e, "create"))?;
        for n in 0..1000u32 {
            let name = match (n, ext.is_empty()) {
                (0, true) => clean.clone(),
                (0, false) => format!("{clean}.{ext}"),
                (_, true) => format!("{clean}-{n}"),
                (_, false) => format!("{clean}-{n}.{ext}"),
            };
            let path = self.output_dir.join(name);
            // `create_new` also refuses a symbolic link at that name.
            match tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .await
            {
                Ok(mut f) => {
                    use tokio::io::AsyncWriteExt;
                    // A tokio file writes in the background: flush before
                    // the path is handed out, or it may still be empty.
                    let written = match f.write_all(bytes).await {
                        Ok(()) => f.flush().await,
                        Err(e) => Err(e),
                    };
                    written.map_err(|e| {
                        FileError(format!("Cannot write `{}`: {e}.", path.display()))
                    })?;
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(unwritable(e, "write in")),
            }
        }
        Err(FileError(format!(
            "Too many files named `{clean}` in `{}`.",
            self.output_dir.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(dir: &Path, max: u64) -> Sandbox {
        Sandbox::new(vec![dir.join("in")], dir.join("out"), max)
    }

    #[tokio::test]
    async fn inputs_must_lie_under_a_root() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("in")).expect("mkdir");
        std::fs::write(dir.path().join("in/a.txt"), b"ok").expect("write");
        std::fs::write(dir.path().join("secret.txt"), b"no").expect("write");
        let f = sandbox(dir.path(), 100);
        let inside = dir.path().join("in/a.txt");
        assert_eq!(
            f.read_input(&inside.to_string_lossy())
                .await
                .expect("inside"),
            b"ok"
        );
        let escape = dir.path().join("in/../secret.txt");
        let err = f.read_input(&escape.to_string_lossy()).await.unwrap_err();
        assert!(err.to_string().contains("input_roots"), "{err}");
    }

    #[tokio::test]
    async fn a_link_out_of_the_roots_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("in")).expect("mkdir");
        std::fs::write(dir.path().join("secret.txt"), b"no").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), dir.path().join("in/link"))
            .expect("symlink");
        let f = sandbox(dir.path(), 100).with_keys(SandboxKeys {
            input_roots: "[x] roots".into(),
            ..SandboxKeys::default()
        });
        let err = f
            .read_input(&dir.path().join("in/link").to_string_lossy())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("[x] roots"), "{err}");
    }

    #[tokio::test]
    async fn inputs_over_the_cap_are_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("in")).expect("mkdir");
        std::fs::write(dir.path().join("in/big"), [0u8; 10]).expect("write");
        let err = sandbox(dir.path(), 4)
            .read_input(&dir.path().join("in/big").to_string_lossy())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("max_input_bytes"), "{err}");
    }

    #[tokio::test]
    async fn outputs_never_overwrite() {
        let dir = tempfile::tempdir().expect("temp dir");
        let f = sandbox(dir.path(), 100);
        let a = f
            .write_output("../../x y", "wav", b"1")
            .await
            .expect("first");
        let b = f
            .write_output("../../x y", "wav", b"2")
            .await
            .expect("second");
        assert_ne!(a, b);
        assert!(a.starts_with(f.output_dir()) && b.starts_with(f.output_dir()));
        assert_eq!(std::fs::read(a).expect("read"), b"1");
    }
}

//! A certificate authority made for one test with the `openssl` command line: it issues
//! certificates for `127.0.0.1` / `localhost`, usable by servers and clients alike.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A CA in a folder: `ca.crt` and `ca.key`.
pub struct TestCa {
    dir: PathBuf,
}

/// One issued certificate and its key (PEM files).
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl (Debian package openssl)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn text(path: &Path) -> String {
    path.to_string_lossy().to_string()
}

impl TestCa {
    /// Makes a fresh CA in `dir` (created if missing).
    pub fn new(dir: &Path) -> TestCa {
        std::fs::create_dir_all(dir).expect("CA folder");
        let ca = TestCa {
            dir: dir.to_path_buf(),
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=baton-test-ca",
            "-keyout",
            &text(&ca.dir.join("ca.key")),
            "-out",
            &text(&ca.cert()),
        ]);
        ca
    }

    /// The CA certificate peers verify with.
    pub fn cert(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// Issues `<name>.crt` / `<name>.key` for 127.0.0.1 and localhost, for server and client
    /// authentication, with a 0600 key.
    pub fn issue(&self, name: &str) -> Issued {
        let extensions = self.dir.join(format!("{name}.ext"));
        std::fs::write(
            &extensions,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .expect("extension file");
        let issued = Issued {
            cert: self.dir.join(format!("{name}.crt")),
            key: self.dir.join(format!("{name}.key")),
        };
        let request = self.dir.join(format!("{name}.csr"));
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &text(&issued.key),
            "-out",
            &text(&request),
        ]);
        openssl(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            &text(&request),
            "-CA",
            &text(&self.cert()),
            "-CAkey",
            &text(&self.dir.join("ca.key")),
            "-CAcreateserial",
            "-extfile",
            &text(&extensions),
            "-out",
            &text(&issued.cert),
        ]);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&issued.key, std::fs::Permissions::from_mode(0o600))
            .expect("key mode");
        issued
    }
}

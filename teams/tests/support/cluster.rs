//! A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary
//! directory with the machine's binaries, a private Unix socket directory
//! and a free TCP port on 127.0.0.1, password authentication, stopped (and
//! its files removed) when dropped, also when a test fails. Never a user's
//! running server. Run as root (CI), the server runs as `nobody`, as
//! PostgreSQL refuses root.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The user and password of the cluster's superuser.
pub const USER: &str = "dsr";
pub const PASSWORD: &str = "team-secret";

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    as_user: Option<u32>,
}

/// The directory of the PostgreSQL binaries: `pg_config --bindir` when it
/// holds `initdb`, else Debian's, else the `PATH`'s. With
/// `DSR_INSTALL_POSTGRES=1` and none found, Debian's `postgresql` is
/// installed with apt-get.
fn bindir() -> PathBuf {
    let has_initdb = |d: &Path| d.join("initdb").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_initdb(&d) {
            return d;
        }
    }
    let find = || {
        let debian = std::fs::read_dir("/usr/lib/postgresql").ok()?;
        let mut found: Vec<PathBuf> =
            debian.flatten().map(|e| e.path().join("bin")).filter(|d| has_initdb(d)).collect();
        found.sort();
        found.pop()
    };
    if let Some(d) = find() {
        return d;
    }
    if std::env::var("DSR_INSTALL_POSTGRES").as_deref() == Ok("1") {
        let ok =
            Command::new("apt-get").args(["install", "-y", "-q", "postgresql"]).status().is_ok_and(|s| s.success());
        assert!(ok, "apt-get install postgresql failed");
        if let Some(d) = find() {
            return d;
        }
    }
    panic!(
        "no PostgreSQL binaries (initdb) found: install Debian's postgresql package, or run with \
         DSR_INSTALL_POSTGRES=1 to have the test install it"
    );
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

impl Cluster {
    /// A new cluster, started.
    pub fn start() -> Cluster {
        let bin = bindir();
        let dir = tempfile::Builder::new().prefix("dsr-pg-").tempdir().expect("a temporary directory");
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc_geteuid() } == 0;
        let as_user = root.then_some(65534);
        let cluster = Cluster { dir, bin, port: free_port(), as_user };
        std::fs::create_dir_all(cluster.sockets()).expect("the socket directory");
        std::fs::write(cluster.dir.path().join("pw"), PASSWORD).expect("the password file");
        if let Some(uid) = as_user {
            let _ = std::fs::set_permissions(cluster.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755));
            for path in [cluster.dir.path().to_path_buf(), cluster.sockets(), cluster.dir.path().join("pw")] {
                std::os::unix::fs::chown(&path, Some(uid), Some(uid)).expect("chown for the server's user");
            }
        }
        let data = cluster.data();
        let pw = cluster.dir.path().join("pw");
        let out = cluster.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                USER,
                "--pwfile",
                pw.to_str().unwrap(),
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        cluster.start_server();
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn sockets(&self) -> PathBuf {
        self.dir.path().join("sockets")
    }

    /// Runs a PostgreSQL binary as the server's user.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = match self.as_user {
            Some(uid) => {
                let mut c = Command::new("setpriv");
                c.args([&format!("--reuid={uid}"), &format!("--regid={uid}"), "--clear-groups", "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(args).env("PGPASSWORD", PASSWORD).stdin(Stdio::null());
        cmd.output().unwrap_or_else(|e| panic!("{program} could not run: {e}"))
    }

    /// Starts the server (again, after [`kill`](Self::kill)).
    pub fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            self.port,
            self.sockets().display()
        );
        let log = self.dir.path().join("log");
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "the server did not start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Stops the server at once, as a crash would (`-m immediate`).
    pub fn kill(&self) {
        let _ = self.run("pg_ctl", &["-D", self.data().to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
    }

    /// The URL of the cluster's `postgres` database over TCP.
    pub fn url(&self) -> String {
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/postgres?sslmode=disable", self.port)
    }

    /// The URL of a new database `name` over TCP.
    pub fn new_database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{name}?sslmode=disable", self.port)
    }

    /// The output of `sql` run by psql on database `db` (unaligned, tuples only).
    pub fn psql(&self, db: &str, sql: &str) -> String {
        self.try_psql(db, sql).unwrap_or_else(|e| panic!("psql {sql:?} failed: {e}"))
    }

    /// [`psql`](Self::psql), its failure returned.
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let sockets = self.sockets();
        let port = self.port.to_string();
        let out = self.run(
            "psql",
            &[
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                sockets.to_str().unwrap(),
                "-p",
                &port,
                "-U",
                USER,
                "-d",
                db,
                "-c",
                sql,
            ],
        );
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8(out.stdout).expect("UTF-8 from psql"))
    }

    /// Every table of database `db`, dumped as text (`pg_dump`, data and schema).
    pub fn dump(&self, db: &str) -> String {
        let sockets = self.sockets();
        let port = self.port.to_string();
        let out = self.run("pg_dump", &["-h", sockets.to_str().unwrap(), "-p", &port, "-U", USER, "-d", db]);
        assert!(out.status.success(), "pg_dump failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("UTF-8 from pg_dump")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.run("pg_ctl", &["-D", self.data().to_str().unwrap(), "-m", "immediate", "-w", "stop"]);
    }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

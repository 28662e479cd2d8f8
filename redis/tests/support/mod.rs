//! A `redis-server` (or `valkey-server`) of the test's own: on 127.0.0.1, a free port, a temporary
//! directory, no persistence unless asked; killed when dropped. Nothing assumes a running server.
//!
//! `RITMO_REDIS_SERVER` names the binary (default `redis-server`; `valkey-server` runs the suite on
//! Valkey). When it is not installed a test skips with a message, except on CI (`CI` set), where
//! that is a failure: there `scripts/test-all` installs it.
#![allow(dead_code)] // each test file uses its own share

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The server binary the tests run.
pub fn binary() -> String {
    std::env::var("RITMO_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// Whether the server binary can be run: `false` (and a message) means skip; on CI a missing
/// binary panics instead, so that a CI run never passes by skipping.
pub fn available() -> bool {
    let found = Command::new(binary())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let message = format!(
            "{} is not installed: the Redis tests need it (apt-get install -y redis-server)",
            binary()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{message}; CI must run them");
        }
        eprintln!("SKIPPED: {message}");
    }
    found
}

/// A running server.
pub struct Server {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    persistent: bool,
    cluster: bool,
}

impl Server {
    /// A fresh server with no persistence, or `None` (after a message) if there is no binary.
    pub fn start() -> Option<Server> {
        Self::start_with(false)
    }

    /// A server that writes every change to its append-only file before answering, so that a
    /// SIGKILL loses nothing and a restart in the same directory comes back with every key.
    pub fn start_persistent() -> Option<Server> {
        Self::start_with(true)
    }

    /// Three servers in cluster mode, their slots assigned (`redis-cli --cluster create`), ready.
    pub fn start_cluster() -> Option<Vec<Server>> {
        if !available() {
            return None;
        }
        let nodes: Vec<Server> = (0..3).map(|_| Self::on_a_free_port(false, true)).collect();
        let cli = binary().replace("-server", "-cli");
        let status = Command::new(&cli)
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("run {cli}: {e}"));
        assert!(status.success(), "{cli} --cluster create failed");
        let deadline = Instant::now() + Duration::from_secs(20);
        for node in &nodes {
            loop {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut node.conn())
                    .unwrap();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the cluster did not come up: {info}"
                );
                thread::sleep(Duration::from_millis(50));
            }
        }
        Some(nodes)
    }

    fn start_with(persistent: bool) -> Option<Server> {
        if !available() {
            return None;
        }
        Some(Self::on_a_free_port(persistent, false))
    }

    /// A server of its own on a port that was free. Two tests may be handed the same free port
    /// at once; the server started second then cannot listen and exits, while the first answers
    /// both tests (and one test's kill would stop the other's server): so a server counts as
    /// started only when the process that answers on the port is this one, else another port is
    /// tried.
    fn on_a_free_port(persistent: bool, cluster: bool) -> Server {
        let mut server = Server {
            child: None,
            port: 0,
            dir: tempfile::tempdir().expect("a temporary directory"),
            persistent,
            cluster,
        };
        for _ in 0..10 {
            server.port = free_port();
            if server.spawn() {
                return server;
            }
        }
        panic!("{} found no free port of its own in 10 tries", binary());
    }

    /// Starts the server on its port; `false` if another process holds the port (this one
    /// exited).
    fn spawn(&mut self) -> bool {
        let mut command = Command::new(binary());
        command
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--dir"])
            .arg(self.dir.path())
            .args(["--save", ""])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if self.cluster {
            command.args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ]);
        }
        if self.persistent {
            command.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            command.args(["--appendonly", "no"]);
        }
        let child = command.spawn().expect("start the server");
        self.child = Some(child);
        self.wait_ready()
    }

    /// Waits until the server answers on its port: `true` when the process answering is this
    /// server's, `false` when this server exited (the port was not free after all).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let url = self.url();
        let child = self.child.as_mut().expect("a started server");
        let pid = child.id();
        loop {
            if let Ok(mut conn) = redis::Client::open(url.as_str()).and_then(|c| c.get_connection())
                && let Ok(info) = redis::cmd("INFO").arg("server").query::<String>(&mut conn)
            {
                let answering = info
                    .lines()
                    .find_map(|line| line.strip_prefix("process_id:"))
                    .and_then(|id| id.trim().parse::<u32>().ok());
                if answering == Some(pid) {
                    return true;
                }
            }
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not start on port {}",
                binary(),
                self.port
            );
            thread::sleep(Duration::from_millis(20));
        }
        self.child = None;
        false
    }

    /// `redis://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        url_of(self.port)
    }

    /// A plain connection, for looking at keys and `INFO`.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .expect("connect to the test server")
    }

    /// SIGKILL: the server dies at once, without saving anything.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory.
    pub fn restart(&mut self) {
        self.kill();
        assert!(
            self.spawn(),
            "{} could not restart on port {}: another process took it",
            binary(),
            self.port
        );
    }

    /// SIGSTOP: the server stops answering but keeps its connections open (a hung server).
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// SIGCONT after [`pause`](Server::pause).
    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let pid = self.child.as_ref().expect("a running server").id();
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// The number of times each command ran, from `INFO commandstats`.
    pub fn command_calls(&self) -> std::collections::BTreeMap<String, u64> {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut self.conn())
            .unwrap();
        info.lines()
            .filter_map(|line| {
                let rest = line.strip_prefix("cmdstat_")?;
                let (name, stats) = rest.split_once(':')?;
                let calls = stats.split(',').find_map(|f| f.strip_prefix("calls="))?;
                Some((name.to_string(), calls.parse().ok()?))
            })
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A paused server cannot die of SIGKILL any slower, but make sure it is not left stopped.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(child.id().to_string())
                .status();
        }
        self.kill();
    }
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().unwrap().port()
}

/// A port of 127.0.0.1 that refuses every connection for as long as this value lives: bound by
/// this process but never listening, so that no server another test starts can take it meanwhile
/// (a port merely found free could be handed to one).
pub struct Refusing {
    _socket: socket2::Socket,
    port: u16,
}

impl Refusing {
    /// Binds a port the system picks, without listening on it.
    pub fn bind() -> Refusing {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a TCP socket");
        socket
            .bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .expect("bind a free port");
        let port = socket
            .local_addr()
            .expect("the bound address")
            .as_socket()
            .expect("an IP address")
            .port();
        Refusing {
            _socket: socket,
            port,
        }
    }

    /// A Redis URL naming the port.
    pub fn url(&self) -> String {
        url_of(self.port)
    }
}

/// `redis://127.0.0.1:<port>/`
pub fn url_of(port: u16) -> String {
    format!("redis://127.0.0.1:{port}/")
}

/// Whether anything answers on `port`.
pub fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// A TCP server on 127.0.0.1 that accepts every connection and reads what it is sent, but answers
/// late or never: a slow or hung store that is not Redis. Stops accepting when dropped.
pub struct Slow {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Slow {
    /// Answers each read with a Redis error after `delay`; `None`: never answers.
    pub fn start(delay: Option<Duration>) -> Slow {
        use std::io::{Read, Write};
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = (accepted.clone(), stop.clone());
        thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    thread::sleep(Duration::from_millis(2));
                    continue;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let done = done.clone();
                thread::spawn(move || {
                    stream.set_nonblocking(false).unwrap();
                    stream
                        .set_read_timeout(Some(Duration::from_millis(50)))
                        .unwrap();
                    let mut buf = [0u8; 4096];
                    while !done.load(Ordering::Relaxed) {
                        match stream.read(&mut buf) {
                            Ok(0) => return,
                            Ok(_) => {
                                if let Some(delay) = delay {
                                    thread::sleep(delay);
                                    if stream.write_all(b"-ERR too slow\r\n").is_err() {
                                        return;
                                    }
                                }
                            }
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        });
        Slow {
            port,
            accepted,
            stop,
        }
    }

    /// `redis://127.0.0.1:<port>/`
    pub fn url(&self) -> String {
        url_of(self.port)
    }

    /// How many connections it has accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Slow {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

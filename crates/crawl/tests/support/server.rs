//! A small HTTP/1.1 server for the end-to-end tests: std::net, one thread
//! per connection, keep-alive, bound to 127.0.0.1:0. Every request is
//! counted per path (query string excluded) before it is answered.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One request as the handler sees it.
#[derive(Debug, Clone)]
pub struct Request {
    /// Path without the query string.
    pub path: String,
    /// How many times this path was requested, this one included (1-based).
    pub nth: u32,
    /// The request target as sent: path and query (read by some tests only).
    #[allow(dead_code)]
    pub target: String,
}

/// What the server does with a request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A response with this status, content type and body.
    Body {
        status: u16,
        content_type: &'static str,
        body: String,
    },
    /// A redirect (`status` 301/302/...) to `location`.
    Redirect { status: u16, location: String },
    /// Keep the connection open and never answer.
    Hang,
    /// An HTML page with one more header line (`name: value`, no CRLF).
    HtmlWithHeader { header: String, body: String },
}

impl Reply {
    pub fn html(body: impl Into<String>) -> Reply {
        Reply::Body {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: body.into(),
        }
    }

    pub fn text(body: impl Into<String>) -> Reply {
        Reply::Body {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }

    pub fn status(status: u16) -> Reply {
        Reply::Body {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("status {status}"),
        }
    }
}

pub type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

struct Shared {
    counts: Mutex<HashMap<String, u32>>,
    stop: AtomicBool,
    handler: Box<Handler>,
}

/// A running server; it stops accepting (and hung connections close) when
/// dropped.
pub struct Server {
    port: u16,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Server {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let shared = Arc::new(Shared {
            counts: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            handler: Box::new(handler),
        });
        let s = shared.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                thread::spawn(move || serve(conn, &s));
            }
        });
        Server { port, shared }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Requests seen per path (query excluded).
    pub fn counts(&self) -> HashMap<String, u32> {
        self.shared.counts.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(conn: TcpStream, s: &Shared) {
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else { return };
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // Headers (GET requests only: no body to read).
        loop {
            let mut h = String::new();
            match reader.read_line(&mut h) {
                Ok(0) | Err(_) => return,
                Ok(_) if h == "\r\n" || h == "\n" => break,
                Ok(_) => {}
            }
        }
        let target = request_line.split_whitespace().nth(1).unwrap_or("/");
        let path = target.split(['?', '#']).next().unwrap_or("/").to_string();
        let nth = {
            let mut counts = s.counts.lock().unwrap();
            let n = counts.entry(path.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let reply = (s.handler)(&Request {
            path,
            nth,
            target: target.to_string(),
        });
        let (status, headers, body) = match reply {
            Reply::Hang => {
                // Hold the connection open, silent, until the server stops.
                while !s.stop.load(Ordering::SeqCst) {
                    thread::sleep(Duration::from_millis(50));
                }
                return;
            }
            Reply::Body {
                status,
                content_type,
                body,
            } => (status, format!("content-type: {content_type}\r\n"), body),
            Reply::HtmlWithHeader { header, body } => (
                200,
                format!("{header}\r\ncontent-type: text/html; charset=utf-8\r\n"),
                body,
            ),
            Reply::Redirect { status, location } => (
                status,
                format!("location: {location}\r\ncontent-type: text/plain\r\n"),
                String::new(),
            ),
        };
        // One write per response (with TCP_NODELAY): no Nagle stalls.
        let response = format!(
            "HTTP/1.1 {status} {}\r\n{headers}content-length: {}\r\n\r\n{body}",
            reason(status),
            body.len()
        );
        if out.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

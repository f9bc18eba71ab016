//! A tiny hand-rolled HTTP/1.1 server on 127.0.0.1 for fetch tests: every
//! request is logged with its arrival time, every response closes the
//! connection, and a reply can hang to simulate a dead host.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use url::Url;

#[derive(Debug, Clone)]
pub struct Req {
    pub path: String,
    pub at: Instant,
    /// Raw header block, lower-cased.
    pub headers: String,
}

#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response; Content-Length is added.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Status line and the given headers (no Content-Length added), then
    /// `body`, then the connection stays open and silent.
    Partial {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Accept the request and never answer.
    Hang,
}

impl Reply {
    pub fn html(body: &str) -> Reply {
        Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
            body: body.as_bytes().to_vec(),
        }
    }
    pub fn text(body: &str) -> Reply {
        Reply::Full {
            status: 200,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: body.as_bytes().to_vec(),
        }
    }
    pub fn status(status: u16) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: b"status".to_vec(),
        }
    }
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply::Full {
            status,
            headers: vec![("Location".into(), location.into())],
            body: Vec::new(),
        }
    }
    pub fn header(mut self, k: &str, v: &str) -> Reply {
        match &mut self {
            Reply::Full { headers, .. } | Reply::Partial { headers, .. } => {
                headers.push((k.into(), v.into()))
            }
            Reply::Hang => {}
        }
        self
    }
}

type Handler = dyn Fn(&str, usize) -> Reply + Send + Sync;

pub struct Server {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Req>>>,
}

impl Server {
    /// `handler(path, n)` gets the request path and how many earlier requests
    /// had the same path.
    pub async fn start(handler: impl Fn(&str, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log: Arc<Mutex<Vec<Req>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let log2 = Arc::clone(&log);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let log = Arc::clone(&log2);
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    let _ = serve(stream, log, handler).await;
                });
            }
        });
        Server { addr, log }
    }

    pub fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://{}{}", self.addr, path)).unwrap()
    }

    pub fn requests(&self) -> Vec<Req> {
        self.log.lock().clone()
    }

    pub fn count(&self, path: &str) -> usize {
        self.log.lock().iter().filter(|r| r.path == path).count()
    }

    pub fn times(&self, path_prefix: &str) -> Vec<Instant> {
        self.log
            .lock()
            .iter()
            .filter(|r| r.path.starts_with(path_prefix))
            .map(|r| r.at)
            .collect()
    }
}

async fn serve(
    mut stream: TcpStream,
    log: Arc<Mutex<Vec<Req>>>,
    handler: Arc<Handler>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let at = Instant::now();
    let text = String::from_utf8_lossy(&buf).to_string();
    let path = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    let n = {
        let mut log = log.lock();
        let n = log.iter().filter(|r| r.path == path).count();
        log.push(Req {
            path: path.clone(),
            at,
            headers: text.to_ascii_lowercase(),
        });
        n
    };
    let reply = handler(&path, n);
    let (status, headers, body, hang) = match reply {
        Reply::Full {
            status,
            mut headers,
            body,
        } => {
            headers.push(("Content-Length".into(), body.len().to_string()));
            headers.push(("Connection".into(), "close".into()));
            (status, headers, body, false)
        }
        Reply::Partial {
            status,
            headers,
            body,
        } => (status, headers, body, true),
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(120)).await;
            return Ok(());
        }
    };
    let mut head = format!("HTTP/1.1 {status} X\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.flush().await?;
    if hang {
        tokio::time::sleep(Duration::from_secs(120)).await;
    }
    let _ = stream.shutdown().await;
    Ok(())
}

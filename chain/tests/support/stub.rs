//! A stub JSON-RPC node over plain HTTP/1.1 on a loopback port, scripted per test: each request's
//! reply comes from a closure given the request's number and body. It records when (on tokio's
//! clock, virtual in tests that pause time) and what it received. One request per connection
//! (`Connection: close`), which is all the chain service's HTTP client needs.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// A request the stub received.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub body: Value,
}

impl Received {
    /// The methods asked, in order (one for a single request).
    pub fn methods(&self) -> Vec<String> {
        match &self.body {
            Value::Array(items) => items.iter().map(|i| i["method"].as_str().unwrap_or("").to_string()).collect(),
            one => vec![one["method"].as_str().unwrap_or("").to_string()],
        }
    }

    pub fn batch_len(&self) -> Option<usize> {
        self.body.as_array().map(Vec::len)
    }
}

/// What the stub does with one request.
pub enum Reply {
    /// 200 with this JSON body.
    Json(Value),
    /// This status, with an optional `Retry-After` and a body.
    Status { status: u16, retry_after: Option<String> },
    /// Waits `after` (tokio time), then replies.
    Delayed(Duration, Box<Reply>),
    /// Never answers (the connection stays open until the client hangs up, which is counted).
    Hang,
    /// Closes the connection without answering.
    Close,
    /// 200 with a chunked body (no `Content-Length`): `padding` bytes of JSON whitespace, written
    /// as fast as the reader takes them, then `json`. A body whose size is known only once it has
    /// arrived.
    Chunked { padding: usize, json: Value },
    /// 200 announcing a `Content-Length` of `bytes`, then sending nothing.
    Announced { bytes: u64 },
    /// This 3xx status pointing at `location`.
    Redirect { status: u16, location: String },
}

type Script = dyn Fn(usize, &Value) -> Reply + Send + Sync;

pub struct StubNode {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    /// Requests left unanswered ([`Reply::Hang`]) whose client hung up.
    given_up: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl StubNode {
    pub async fn start(script: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let log = received.clone();
        let given_up = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = given_up.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                tokio::spawn(serve(stream, log.clone(), script.clone(), counted.clone()));
            }
        });
        Self { addr, received, given_up, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests left unanswered ([`Reply::Hang`]) whose client has hung up.
    pub fn given_up(&self) -> usize {
        self.given_up.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The waits between consecutive requests.
    pub fn gaps(&self) -> Vec<Duration> {
        let received = self.received();
        received.windows(2).map(|w| w[1].at - w[0].at).collect()
    }
}

impl Drop for StubNode {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Vec<Received>>>, script: Arc<Script>, given_up: Arc<std::sync::atomic::AtomicUsize>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let (header_end, content_length) = loop {
        let Ok(n) = stream.read(&mut chunk).await else { return };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buffer.len() < header_end + content_length {
        let Ok(n) = stream.read(&mut chunk).await else { return };
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buffer[header_end..header_end + content_length]).unwrap_or(Value::Null);
    let number = {
        let mut log = log.lock().unwrap();
        log.push(Received { at: Instant::now(), body: body.clone() });
        log.len() - 1
    };
    let mut reply = script(number, &body);
    loop {
        match reply {
            Reply::Delayed(wait, then) => {
                tokio::time::sleep(wait).await;
                reply = *then;
            }
            Reply::Hang => {
                // Never answers; counts the client hanging up (a read of 0 bytes, or an error).
                while matches!(stream.read(&mut chunk).await, Ok(n) if n > 0) {}
                given_up.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return std::future::pending().await;
            }
            Reply::Close => return,
            Reply::Json(value) => return write(&mut stream, 200, None, &value.to_string()).await,
            Reply::Status { status, retry_after } => {
                return write(&mut stream, status, retry_after.as_deref(), "{\"error\":\"stub says no\"}").await;
            }
            Reply::Chunked { padding, json } => return write_chunked(&mut stream, padding, json.to_string().as_bytes()).await,
            Reply::Announced { bytes } => {
                let head = format!("HTTP/1.1 200 Stub\r\ncontent-type: application/json\r\ncontent-length: {bytes}\r\n\r\n");
                let _ = stream.write_all(head.as_bytes()).await;
                return std::future::pending().await;
            }
            Reply::Redirect { status, location } => {
                let head = format!("HTTP/1.1 {status} Stub\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

async fn write_chunked(stream: &mut TcpStream, mut padding: usize, json: &[u8]) {
    let head = "HTTP/1.1 200 Stub\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let spaces = vec![b' '; 64 * 1024];
    let chunk = |data: &[u8]| [format!("{:x}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat();
    while padding > 0 {
        let n = padding.min(spaces.len());
        // The reader hanging up is how a refused body ends.
        if stream.write_all(&chunk(&spaces[..n])).await.is_err() {
            return;
        }
        padding -= n;
    }
    let _ = stream.write_all(&chunk(json)).await;
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let _ = stream.shutdown().await;
}

async fn write(stream: &mut TcpStream, status: u16, retry_after: Option<&str>, body: &str) {
    let mut head =
        format!("HTTP/1.1 {status} Stub\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
    if let Some(value) = retry_after {
        head.push_str(&format!("retry-after: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A JSON-RPC answer to `body` (single or batch), each request answered by `answer(request)`,
/// which returns `Ok(result)` or `Err((code, message))`.
pub fn answer(body: &Value, answer: impl Fn(&Value) -> Result<Value, (i64, String)>) -> Value {
    let one = |request: &Value| match answer(request) {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": request["id"], "result": result }),
        Err((code, message)) => json!({ "jsonrpc": "2.0", "id": request["id"], "error": { "code": code, "message": message } }),
    };
    match body {
        Value::Array(items) => Value::Array(items.iter().map(one).collect()),
        single => one(single),
    }
}

/// Answers every request with `"0x1"`.
pub fn ok(body: &Value) -> Reply {
    Reply::Json(answer(body, |_| Ok(json!("0x1"))))
}

/// A loopback port where nothing listens (connections are refused).
pub fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

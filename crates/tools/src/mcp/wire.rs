//! The JSON-RPC lines between the client and `rmcp`, checked on the way in:
//! a line that is not JSON is answered with a `-32700` parse error (rmcp
//! would drop it silently), and the `arguments` of a `tools/call` that are
//! not an object are wrapped so the call reaches the server and is answered
//! with a tool error, like any malformed argument (rmcp would refuse the
//! whole request). Every line the server writes goes out whole, so the
//! parse errors never interleave with its messages.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ConstString, JsonRpcMessage};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

/// The key that carries `arguments` that were not an object.
const NOT_AN_OBJECT: &str = "\u{0}agentcaps: arguments that are not an object";
/// The longest message read, on stdio (one line) and over HTTP (one
/// body); a longer one is answered with an error that names this limit.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
/// The longest line passed on to `rmcp`: a checked line may grow a little
/// (wrapped arguments), and must never meet a second, smaller limit.
pub(crate) const FORWARDED_LINE_BYTES: usize = MAX_LINE_BYTES + 64 * 1024;
/// No new request is read while more than this many bytes of answers wait
/// for the client to read them.
pub(crate) const MAX_WAITING_BYTES: usize = 64 * 1024 * 1024;
/// No new request is read while this many requests are unanswered (their
/// answers are not yet written out), so answers still being made cannot
/// add up without bound either.
pub(crate) const MAX_IN_FLIGHT: usize = 32;
/// Buffer of the in-process pipes.
const PIPE_BYTES: usize = 1024 * 1024;

/// The copying tasks.
pub(crate) struct Pumps {
    input: JoinHandle<()>,
    from_server: JoinHandle<()>,
    output: JoinHandle<()>,
}

impl Pumps {
    /// Waits for the output to be written out, and stops reading input.
    pub(crate) async fn finish(self) {
        self.input.abort();
        let _ = self.from_server.await;
        let _ = self.output.await;
    }
}

/// What waits to be written to the client, shared by the pumps.
#[derive(Default)]
struct Backlog {
    bytes: AtomicUsize,
    in_flight: AtomicUsize,
    written: Notify,
}

impl Backlog {
    fn has_room(&self) -> bool {
        self.bytes.load(Ordering::Acquire) <= MAX_WAITING_BYTES
            && self.in_flight.load(Ordering::Acquire) < MAX_IN_FLIGHT
    }

    /// Returns when another request may be read.
    async fn room(&self) {
        loop {
            let written = self.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            if self.has_room() {
                return;
            }
            written.await;
        }
    }
}

/// One line for the client, and whether it answers a forwarded request.
struct Outgoing {
    line: Vec<u8>,
    answers_request: bool,
}

/// Pipes for `rmcp` (what it reads, what it writes) fed from `input` and
/// drained to `output`, with the checks above; no request is read while
/// the client leaves too much unread.
pub(crate) fn checked<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream, Pumps)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (server_read, mut to_server) = tokio::io::duplex(PIPE_BYTES);
    let (from_server, server_write) = tokio::io::duplex(PIPE_BYTES);
    let (queue, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let backlog = Arc::new(Backlog::default());
    let enqueue = {
        let backlog = Arc::clone(&backlog);
        move |queue: &mpsc::UnboundedSender<Outgoing>, line: Vec<u8>, answers_request: bool| {
            backlog.bytes.fetch_add(line.len(), Ordering::AcqRel);
            queue
                .send(Outgoing {
                    line,
                    answers_request,
                })
                .is_ok()
        }
    };
    let input = {
        let backlog = Arc::clone(&backlog);
        let queue = queue.clone();
        let enqueue = enqueue.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(input);
            let mut line = Vec::new();
            loop {
                backlog.room().await;
                line.clear();
                match read_line(&mut reader, &mut line).await {
                    Ok(Line::Eof) | Err(_) => break,
                    Ok(Line::TooLong) => {
                        let answer = with_newline(too_long(&Value::Null));
                        if !enqueue(&queue, answer, false) {
                            break;
                        }
                        continue;
                    }
                    Ok(Line::Read) => {}
                }
                match check_line(&line) {
                    Checked::Skip => {}
                    Checked::Forward(bytes, kind) => {
                        if kind == Kind::Request {
                            backlog.in_flight.fetch_add(1, Ordering::AcqRel);
                        }
                        if to_server.write_all(&bytes).await.is_err() {
                            break;
                        }
                    }
                    Checked::Answer(error) => {
                        if !enqueue(&queue, with_newline(error), false) {
                            break;
                        }
                    }
                }
            }
            let _ = to_server.shutdown().await;
        })
    };
    let from_server = tokio::spawn(async move {
        let mut from_server = BufReader::new(from_server);
        loop {
            let mut line = Vec::new();
            match from_server.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let answers_request = is_response(&line);
                    if !enqueue(&queue, line, answers_request) {
                        break;
                    }
                }
            }
        }
    });
    let output = tokio::spawn(async move {
        let mut output = output;
        while let Some(Outgoing {
            line,
            answers_request,
        }) = outgoing.recv().await
        {
            let failed = output.write_all(&line).await.is_err() || output.flush().await.is_err();
            backlog.bytes.fetch_sub(line.len(), Ordering::AcqRel);
            if answers_request {
                backlog.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
            backlog.written.notify_waiters();
            if failed {
                break;
            }
        }
    });
    (
        server_read,
        server_write,
        Pumps {
            input,
            from_server,
            output,
        },
    )
}

fn with_newline(text: String) -> Vec<u8> {
    let mut bytes = text.into_bytes();
    bytes.push(b'\n');
    bytes
}

/// Which member of a JSON-RPC object comes first: a message the server
/// writes names `method` (a request or notification) or `result`/`error`
/// (a response) before any content, so the first of these keys tells.
fn first_key(line: &[u8]) -> Option<&'static str> {
    let keys: [&'static str; 3] = ["\"method\"", "\"result\"", "\"error\""];
    keys.into_iter()
        .filter_map(|key| memchr::memmem::find(line, key.as_bytes()).map(|at| (at, key)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, key)| key)
}

/// A response from the server (it answers a request the client sent).
fn is_response(line: &[u8]) -> bool {
    matches!(first_key(line), Some("\"result\"" | "\"error\""))
}

enum Line {
    Read,
    TooLong,
    Eof,
}

/// Reads one line (with its `\n`) of at most [`MAX_LINE_BYTES`]; the rest
/// of a longer line is discarded.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() && !too_long {
                Line::Eof
            } else if too_long {
                Line::TooLong
            } else {
                Line::Read
            });
        }
        let (chunk, done) = match memchr(available) {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let used = chunk.len();
        if !too_long && line.len() + used <= MAX_LINE_BYTES {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line.clear();
        }
        reader.consume(used);
        if done {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub(crate) enum Checked {
    /// A blank line: nothing.
    Skip,
    /// Pass these bytes (a whole line) to the server.
    Forward(Vec<u8>, Kind),
    /// Answer the client with this line; the server never sees it.
    Answer(String),
}

/// What a forwarded message is.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Kind {
    /// A request: the server answers it.
    Request,
    /// A notification or a response: nothing answers it.
    Other,
}

/// The request methods whose params the server parses: a request of one
/// of these whose params do not parse gets `-32602`, not `-32601`.
const KNOWN_METHODS: [&str; 13] = [
    rmcp::model::InitializeResultMethod::VALUE,
    rmcp::model::PingRequestMethod::VALUE,
    rmcp::model::ListToolsRequestMethod::VALUE,
    rmcp::model::CallToolRequestMethod::VALUE,
    rmcp::model::SetLevelRequestMethod::VALUE,
    rmcp::model::CompleteRequestMethod::VALUE,
    rmcp::model::ListPromptsRequestMethod::VALUE,
    rmcp::model::GetPromptRequestMethod::VALUE,
    rmcp::model::ListResourcesRequestMethod::VALUE,
    rmcp::model::ListResourceTemplatesRequestMethod::VALUE,
    rmcp::model::ReadResourceRequestMethod::VALUE,
    rmcp::model::SubscribeRequestMethod::VALUE,
    rmcp::model::UnsubscribeRequestMethod::VALUE,
];

/// Checks one message (a line on stdio, a body over HTTP).
pub(crate) fn check_line(line: &[u8]) -> Checked {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Checked::Skip;
    }
    let mut message: Value = match serde_json::from_slice(trimmed) {
        Ok(message) => message,
        Err(e) => return Checked::Answer(parse_error(&e.to_string())),
    };
    let wrapped = wrap_arguments(&mut message);
    let kind = match judge(&message) {
        Ok(kind) => kind,
        Err(answer) => return Checked::Answer(answer),
    };
    if wrapped {
        return Checked::Forward(with_newline(message.to_string()), kind);
    }
    let mut bytes = trimmed.to_vec();
    bytes.push(b'\n');
    Checked::Forward(bytes, kind)
}

/// Whether `message` is a JSON-RPC message the server can take: a request
/// that is not is answered here, with its `id` when it has a readable one
/// (`null` otherwise), `-32602` when a known method's params are wrong and
/// `-32600` for anything else malformed. Notifications and responses are
/// passed on as they are (nothing answers them).
fn judge(message: &Value) -> Result<Kind, String> {
    let Some(object) = message.as_object() else {
        return Err(invalid_request(&Value::Null, "a message is a JSON object"));
    };
    let id = object.get("id");
    let readable_id = match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        _ => None,
    };
    let echo = readable_id.cloned().unwrap_or(Value::Null);
    let Some(method) = object.get("method") else {
        if object.contains_key("result") || object.contains_key("error") {
            return Ok(Kind::Other);
        }
        return Err(invalid_request(&echo, "a request names its method"));
    };
    if id.is_none() {
        return Ok(Kind::Other);
    }
    let Some(method) = method.as_str() else {
        return Err(invalid_request(&echo, "method is a string"));
    };
    if readable_id.is_none() {
        return Err(invalid_request(&echo, "id is a string or a number"));
    }
    match ClientJsonRpcMessage::deserialize(message) {
        Ok(JsonRpcMessage::Request(request)) => match request.request {
            ClientRequest::CustomRequest(_) if KNOWN_METHODS.contains(&method) => {
                Err(invalid_params(&echo, method, message.get("params")))
            }
            _ => Ok(Kind::Request),
        },
        Ok(_) => Ok(Kind::Request),
        Err(_) if KNOWN_METHODS.contains(&method) => {
            Err(invalid_params(&echo, method, message.get("params")))
        }
        Err(e) => Err(invalid_request(&echo, &e.to_string())),
    }
}

fn error_line(id: &Value, code: i64, message: String) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

fn invalid_request(id: &Value, detail: &str) -> String {
    let detail: String = detail.chars().take(200).collect();
    error_line(id, -32600, format!("Invalid Request: {detail}"))
}

fn invalid_params(id: &Value, method: &str, params: Option<&Value>) -> String {
    let detail = if method == rmcp::model::CallToolRequestMethod::VALUE {
        let params = params.cloned().unwrap_or(Value::Null);
        match rmcp::model::CallToolRequestParams::deserialize(&params) {
            Err(e) => e.to_string().chars().take(200).collect(),
            Ok(_) => "they do not match its schema".to_owned(),
        }
    } else {
        "they do not match its schema".to_owned()
    };
    error_line(id, -32602, format!("Invalid params for {method}: {detail}"))
}

/// The answer to a message longer than [`MAX_LINE_BYTES`].
pub(crate) fn too_long(id: &Value) -> String {
    error_line(
        id,
        -32700,
        format!(
            "Parse error: the message is longer than the limit of {} MiB ({MAX_LINE_BYTES} bytes); send less in one message",
            MAX_LINE_BYTES / (1024 * 1024)
        ),
    )
}

/// In a `tools/call` request whose `arguments` are present but neither an
/// object nor null, wraps them as `{NOT_AN_OBJECT: arguments}`.
fn wrap_arguments(message: &mut Value) -> bool {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return false;
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return false;
    };
    match params.get_mut("arguments") {
        Some(arguments) if !arguments.is_object() && !arguments.is_null() => {
            let original = arguments.take();
            let mut wrapped = Map::new();
            wrapped.insert(NOT_AN_OBJECT.to_owned(), original);
            *arguments = Value::Object(wrapped);
            true
        }
        _ => false,
    }
}

/// The arguments as the client sent them: unwraps what
/// [`wrap_arguments`] wrapped.
pub(crate) fn restore_arguments(mut arguments: Map<String, Value>) -> Value {
    if arguments.len() == 1
        && let Some(original) = arguments.remove(NOT_AN_OBJECT)
    {
        return original;
    }
    Value::Object(arguments)
}

fn parse_error(detail: &str) -> String {
    let detail: String = detail.chars().take(200).collect();
    error_line(&Value::Null, -32700, format!("Parse error: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_json_is_answered_with_a_parse_error() {
        let Checked::Answer(error) = check_line(b"this is not json\n") else {
            panic!("not answered");
        };
        let error: Value = serde_json::from_str(&error).expect("json");
        assert_eq!(error["error"]["code"], -32700);
        assert_eq!(error["id"], Value::Null);
    }

    #[test]
    fn blank_lines_are_skipped_and_json_is_forwarded_as_is() {
        assert_eq!(check_line(b"  \r\n"), Checked::Skip);
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut expected = line.to_vec();
        expected.push(b'\n');
        assert_eq!(check_line(line), Checked::Forward(expected, Kind::Request));
    }

    #[test]
    fn arguments_that_are_not_an_object_are_wrapped_and_restored() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":"x"}}"#;
        let Checked::Forward(bytes, _) = check_line(line) else {
            panic!("not forwarded");
        };
        let message: Value = serde_json::from_slice(&bytes).expect("json");
        let arguments = message["params"]["arguments"]
            .as_object()
            .expect("an object now")
            .clone();
        assert_eq!(restore_arguments(arguments), Value::String("x".into()));
    }

    #[test]
    fn object_arguments_are_left_alone() {
        let mut map = Map::new();
        map.insert("path".into(), Value::String("a".into()));
        assert_eq!(restore_arguments(map.clone()), Value::Object(map));
    }

    #[tokio::test]
    async fn pipes_answer_bad_lines_and_pass_the_rest() {
        let input: &[u8] =
            b"garbage\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
        let (mut server_read, server_write, pumps) = checked(input, Vec::<u8>::new());
        let mut seen = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut server_read, &mut seen)
            .await
            .expect("read");
        assert_eq!(
            seen,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        );
        drop(server_write);
        pumps.finish().await;
    }
}

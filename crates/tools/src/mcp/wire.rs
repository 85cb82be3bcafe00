//! The JSON-RPC lines between the client and `rmcp`, checked on the way in:
//! a line that is not JSON is answered with a `-32700` parse error (rmcp
//! would drop it silently), and the `arguments` of a `tools/call` that are
//! not an object are wrapped so the call reaches the server and is answered
//! with a tool error, like any malformed argument (rmcp would refuse the
//! whole request). Every line the server writes goes out whole, so the
//! parse errors never interleave with its messages.

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The key that carries `arguments` that were not an object.
const NOT_AN_OBJECT: &str = "\u{0}agentcaps: arguments that are not an object";
/// The longest line read; a longer one is answered with a parse error.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
/// Buffer of the in-process pipes.
const PIPE_BYTES: usize = 1024 * 1024;

/// The two copying tasks.
pub(crate) struct Pumps {
    input: JoinHandle<()>,
    output: JoinHandle<()>,
}

impl Pumps {
    /// Waits for the output to be written out, and stops reading input.
    pub(crate) async fn finish(self) {
        self.input.abort();
        let _ = self.output.await;
    }
}

/// Pipes for `rmcp` (what it reads, what it writes) fed from `input` and
/// drained to `output`, with the checks above.
pub(crate) fn checked<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream, Pumps)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (server_read, mut to_server) = tokio::io::duplex(PIPE_BYTES);
    let (from_server, server_write) = tokio::io::duplex(PIPE_BYTES);
    let (errors, mut error_lines) = mpsc::unbounded_channel::<String>();
    let input = tokio::spawn(async move {
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut reader, &mut line).await {
                Ok(Line::Eof) | Err(_) => break,
                Ok(Line::TooLong) => {
                    let _ = errors.send(parse_error("the line is longer than the limit"));
                    continue;
                }
                Ok(Line::Read) => {}
            }
            match check_line(&line) {
                Checked::Skip => {}
                Checked::Forward(bytes) => {
                    if to_server.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
                Checked::Answer(error) => {
                    let _ = errors.send(error);
                }
            }
        }
        let _ = to_server.shutdown().await;
    });
    let output = tokio::spawn(async move {
        let mut output = output;
        let mut from_server = BufReader::new(from_server);
        let mut line = Vec::new();
        let mut server_open = true;
        loop {
            tokio::select! {
                read = from_server.read_until(b'\n', &mut line), if server_open => {
                    match read {
                        Ok(0) | Err(_) => server_open = false,
                        Ok(_) => {
                            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                                break;
                            }
                            line.clear();
                        }
                    }
                }
                error = error_lines.recv() => {
                    match error {
                        Some(error) => {
                            let text = format!("{error}\n");
                            if output.write_all(text.as_bytes()).await.is_err() || output.flush().await.is_err() {
                                break;
                            }
                        }
                        None if !server_open => break,
                        None => {
                            // No more parse errors can come; drain the server.
                            let _ = tokio::io::copy_buf(&mut from_server, &mut output).await;
                            let _ = output.flush().await;
                            break;
                        }
                    }
                }
                else => break,
            }
        }
    });
    (server_read, server_write, Pumps { input, output })
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
    Forward(Vec<u8>),
    /// Answer the client with this line; the server never sees it.
    Answer(String),
}

pub(crate) fn check_line(line: &[u8]) -> Checked {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Checked::Skip;
    }
    let mut message: Value = match serde_json::from_slice(trimmed) {
        Ok(message) => message,
        Err(e) => return Checked::Answer(parse_error(&e.to_string())),
    };
    if wrap_arguments(&mut message) {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        return Checked::Forward(bytes);
    }
    let mut bytes = trimmed.to_vec();
    bytes.push(b'\n');
    Checked::Forward(bytes)
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
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {detail}")},
    })
    .to_string()
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
        assert_eq!(check_line(line), Checked::Forward(expected));
    }

    #[test]
    fn arguments_that_are_not_an_object_are_wrapped_and_restored() {
        let line = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":"x"}}"#;
        let Checked::Forward(bytes) = check_line(line) else {
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
        let input: &[u8] = b"garbage\n{\"a\":1}\n";
        let (mut server_read, server_write, pumps) = checked(input, Vec::<u8>::new());
        let mut seen = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut server_read, &mut seen)
            .await
            .expect("read");
        assert_eq!(seen, "{\"a\":1}\n");
        drop(server_write);
        pumps.finish().await;
    }
}

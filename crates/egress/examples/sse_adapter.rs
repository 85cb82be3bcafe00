//! A model-provider adapter built on the egress client: it POSTs a JSON
//! request with a bearer token and reads the answer as server-sent events
//! while they stream in.
//!
//! The total deadline (`timeout_ms`) is set long, so a generation may
//! stream for minutes; the idle limit (`idle_timeout_ms`, here per
//! request) is short, so a stream that stalls is noticed within seconds.
//! The URL is judged like any other: a provider endpoint that resolves to
//! a private address is refused before anything is sent.
//!
//! ```text
//! AGENTCAPS_ADAPTER_URL=https://api.example.com/v1/chat \
//! AGENTCAPS_ADAPTER_TOKEN=sk-... \
//!   cargo run -p agentcaps-egress --example sse_adapter -- "Say hello"
//! ```

use std::time::Duration;

use agentcaps_egress::{Client, EgressError, EgressPolicyConfig, Method};

/// One adapter: the client, the endpoint and the credential.
pub struct Adapter {
    client: Client,
    endpoint: String,
    token: String,
    idle: Duration,
}

/// What stopped a stream.
#[derive(Debug)]
pub enum AdapterError {
    /// The egress client refused or failed (the idle limit included:
    /// `rule()` is then `time.idle`).
    Egress(EgressError),
    /// The provider answered with an error status.
    Status(u16, String),
}

impl std::fmt::Display for AdapterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdapterError::Egress(e) => write!(f, "[{}] {e}", e.rule()),
            AdapterError::Status(status, body) => write!(f, "HTTP {status}: {body}"),
        }
    }
}

impl From<EgressError> for AdapterError {
    fn from(e: EgressError) -> Self {
        AdapterError::Egress(e)
    }
}

impl Adapter {
    /// An adapter for `endpoint`, sending `token` as a bearer token.
    /// `idle` bounds the silence between two pieces of the stream.
    pub fn new(client: Client, endpoint: &str, token: &str, idle: Duration) -> Self {
        Adapter {
            client,
            endpoint: endpoint.to_owned(),
            token: token.to_owned(),
            idle,
        }
    }

    /// Sends `prompt` and calls `on_event` with the `data` of every event
    /// as it arrives, until the stream ends or sends `[DONE]`. Returns the
    /// number of events.
    ///
    /// # Errors
    ///
    /// A refusal or failure of the client (a stalled stream is
    /// `time.idle`), or an error status from the provider.
    pub async fn complete(
        &self,
        prompt: &str,
        mut on_event: impl FnMut(&str),
    ) -> Result<usize, AdapterError> {
        let body = serde_json::json!({
            "model": "example-model",
            "stream": true,
            "messages": [{"role": "user", "content": prompt}],
        });
        let mut response = self
            .client
            .request(Method::POST, &self.endpoint)
            .header("Authorization", &format!("Bearer {}", self.token))
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream")
            .idle_timeout(self.idle)
            .body(body.to_string())
            .send()
            .await?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let text = response.text().await?.text;
            return Err(AdapterError::Status(status, text));
        }
        let mut events = Events::default();
        let mut count = 0;
        while let Some(chunk) = response.chunk().await? {
            for data in events.push(&chunk) {
                if data == "[DONE]" {
                    return Ok(count);
                }
                count += 1;
                on_event(&data);
            }
        }
        Ok(count)
    }
}

/// A server-sent-events reader: bytes in, the `data` of each complete
/// event out (multi-line data joined by `\n`; other fields ignored).
#[derive(Debug, Default)]
pub struct Events {
    pending: Vec<u8>,
}

impl Events {
    /// Adds bytes; returns the events they completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some((end, skip)) = boundary(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end + skip).take(end).collect();
            let text = String::from_utf8_lossy(&event);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                out.push(data.join("\n"));
            }
        }
        out
    }
}

/// Where the first event ends (a blank line) and how long the separator is.
fn boundary(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let endpoint = std::env::var("AGENTCAPS_ADAPTER_URL")
        .unwrap_or_else(|_| "https://api.example.com/v1/chat".to_owned());
    let token = std::env::var("AGENTCAPS_ADAPTER_TOKEN").unwrap_or_default();
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Say hello".to_owned());
    let config = EgressPolicyConfig {
        allowed_methods: vec!["POST".to_owned()],
        // Minutes for a whole generation, seconds of silence at most.
        timeout_ms: 10 * 60 * 1000,
        ..EgressPolicyConfig::default()
    };
    let client = match config.build().and_then(Client::new) {
        Ok(client) => client,
        Err(e) => {
            eprintln!("adapter: {e}");
            std::process::exit(2);
        }
    };
    let adapter = Adapter::new(client, &endpoint, &token, Duration::from_secs(20));
    match adapter.complete(&prompt, |data| println!("{data}")).await {
        Ok(n) => eprintln!("adapter: {n} events"),
        Err(e) => {
            eprintln!("adapter: {e}");
            std::process::exit(1);
        }
    }
}

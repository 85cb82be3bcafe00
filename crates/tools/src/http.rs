//! `http_request`: through `agentcaps-egress`, which resolves the name
//! itself, judges every address and connects only to a judged one.

use std::collections::BTreeMap;

use agentcaps::Policy;
use agentcaps::egress::{Client, EgressError, HeaderMap, Method};
use schemars::JsonSchema;
use serde::Serialize;

use crate::toolbox::Answer;
use crate::{ToolError, inputs};

const TOOL: &str = "http_request";

/// The HTTP tool: the client and what it allows, in words.
pub(crate) struct HttpTool {
    client: Client,
    allowed: String,
    described: String,
}

/// Result of `http_request`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HttpOutput {
    /// The HTTP status code.
    status: u16,
    /// Response headers, name to value (repeated names joined with `, `).
    headers: BTreeMap<String, String>,
    /// The body as text (invalid UTF-8 replaced).
    body: String,
    /// The body was cut at the policy's `max_response_bytes`.
    truncated: bool,
    /// The policy's deadline passed while reading the body.
    timed_out: bool,
    /// The URL after redirects.
    final_url: String,
    /// The address actually connected to.
    dialled: String,
}

impl Answer for HttpOutput {
    fn text(&self) -> String {
        let mut text = format!("status: {}\nurl: {}\n", self.status, self.final_url);
        let content_type = self.headers.get("content-type");
        if let Some(content_type) = content_type {
            text.push_str(&format!("content-type: {content_type}\n"));
        }
        text.push_str("body:\n");
        text.push_str(&self.body);
        if self.truncated {
            crate::files::note(&mut text, "body cut at the response limit");
        }
        if self.timed_out {
            crate::files::note(&mut text, "the deadline passed while reading the body");
        }
        text
    }
}

impl HttpTool {
    pub(crate) fn new(policy: &Policy) -> Result<Self, ToolError> {
        let egress = policy.egress_policy()?;
        let (described, allowed) = describe_egress(policy);
        let client = Client::new(egress).map_err(|source| ToolError::Egress {
            tool: "toolbox",
            source: Box::new(source),
            allowed: allowed.clone(),
        })?;
        Ok(Self {
            client,
            allowed,
            described,
        })
    }

    /// "Allowed: …" for the description.
    pub(crate) fn described(&self) -> &str {
        &self.described
    }

    fn refused(&self, source: EgressError) -> ToolError {
        ToolError::Egress {
            tool: TOOL,
            source: Box::new(source),
            allowed: self.allowed.clone(),
        }
    }

    pub(crate) async fn request(
        &self,
        input: inputs::HttpRequest,
    ) -> Result<HttpOutput, ToolError> {
        let method: Method = input
            .method
            .as_deref()
            .unwrap_or("GET")
            .parse()
            .map_err(|_| ToolError::InvalidArguments {
                tool: TOOL,
                message: format!(
                    "`{}` is not an HTTP method",
                    input.method.unwrap_or_default()
                ),
            })?;
        let mut request = self.client.request(method, &input.url);
        for (name, value) in input.headers.unwrap_or_default() {
            request = request.header(&name, &value);
        }
        if let Some(body) = input.body {
            request = request.body(body.into_bytes());
        }
        if let Some(name) = &input.credential {
            request = request.credential(name);
        }
        let response = request.send().await.map_err(|e| self.refused(e))?;
        let status = response.status().as_u16();
        let headers = header_map(response.headers());
        let final_url = response.url().to_owned();
        let dialled = response
            .remote_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        let body = response.text().await.map_err(|e| self.refused(e))?;
        Ok(HttpOutput {
            status,
            headers,
            body: body.text,
            truncated: body.truncated,
            timed_out: body.timed_out,
            final_url,
            dialled,
        })
    }
}

/// Response headers as name → value (repeated names joined with `, `;
/// values that are not text replaced lossily).
pub fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        map.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    map
}

/// (the description, the short form for refusals)
fn describe_egress(policy: &Policy) -> (String, String) {
    let config = &policy.egress;
    let methods = if config.allowed_methods.is_empty() {
        "GET, HEAD, OPTIONS".to_owned()
    } else {
        config.allowed_methods.join(", ")
    };
    let hosts = if config.allowed_domains.is_empty() {
        "any host".to_owned()
    } else {
        format!("only {}", crate::describe::list(&config.allowed_domains))
    };
    let ports = if config.allowed_ports.is_empty() {
        "80, 443".to_owned()
    } else {
        let ports: Vec<String> = config
            .allowed_ports
            .iter()
            .map(ToString::to_string)
            .collect();
        ports.join(", ")
    };
    let short = format!("Allowed: http/https to {hosts}, ports {ports}, methods {methods}.");
    let long = format!(
        "Allowed: http/https to {hosts} on public addresses (private, loopback, link-local and cloud-metadata addresses are refused), ports {ports}, methods {methods}. Bodies are cut at {} bytes; redirects are followed at most {} times, each judged.",
        config.max_response_bytes, config.max_redirects
    );
    let credentials: Vec<String> = policy
        .credentials()
        .iter()
        .map(|c| format!("{} for {}", c.name, c.credential.hosts().join(", ")))
        .collect();
    let long = if credentials.is_empty() {
        long
    } else {
        format!(
            "{long} Credentials (name one in `credential`; it is added for https:// to its hosts, and you never see it): {}.",
            credentials.join("; ")
        )
    };
    (long, short)
}

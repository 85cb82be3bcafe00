//! `agentcaps fetch`.

use agentcaps::egress::{Client, EgressError, Method};
use serde_json::json;

use super::{FetchArgs, Outcome, load_policy, runtime};

/// Parses `--method`.
pub(crate) fn method(raw: &str) -> Result<Method, Outcome> {
    raw.to_ascii_uppercase()
        .parse()
        .map_err(|_| Outcome::usage("usage", format!("`{raw}` is not an HTTP method")))
}

/// The outcome for a refusal (exit 3) or a failure (exit 1).
pub(crate) fn egress_outcome(e: &EgressError) -> Outcome {
    Outcome::from_error(e.is_refusal(), e.rule(), e)
}

/// `fetch`: exit 0 with the body on stdout (any HTTP status), 3 refused,
/// 1 network failure.
pub(crate) fn fetch(args: &FetchArgs) -> Outcome {
    match fetch_inner(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn fetch_inner(args: &FetchArgs) -> Result<Outcome, Outcome> {
    let policy = load_policy(args.common.policy.as_deref())?;
    let egress = policy
        .egress_policy()
        .map_err(|e| Outcome::usage("policy", e.to_string()))?;
    let method = method(&args.method)?;
    let client = Client::new(egress).map_err(|e| egress_outcome(&e))?;
    let mut request = client.request(method, &args.url);
    for header in &args.headers {
        let Some((name, value)) = header.split_once(':') else {
            return Err(Outcome::usage(
                "usage",
                format!("header `{header}` is not `Name: value`"),
            ));
        };
        request = request.header(name.trim(), value.trim());
    }
    if let Some(data) = &args.data {
        request = request.body(data.clone().into_bytes());
    }
    let rt = runtime()?;
    rt.block_on(async {
        let response = request.send().await.map_err(|e| egress_outcome(&e))?;
        let status = response.status().as_u16();
        let headers = agentcaps_tools::header_map(response.headers());
        let final_url = response.url().to_owned();
        let dialled = response.remote_addr().map(|a| a.to_string());
        let body = response.text().await.map_err(|e| egress_outcome(&e))?;
        if status >= 400 {
            eprintln!("agentcaps: HTTP status {status}");
        }
        if body.truncated {
            eprintln!("agentcaps: the body was cut at max_response_bytes; what arrived is shown");
        }
        if body.stalled {
            eprintln!(
                "agentcaps: the body stopped arriving for idle_timeout_ms; what arrived is shown"
            );
        } else if body.timed_out {
            eprintln!(
                "agentcaps: the deadline (timeout_ms) hit while reading the body; what arrived is shown"
            );
        }
        Ok(Outcome::allowed(format!("fetched {final_url}: HTTP status {status}"))
            .text(body.text.clone())
            .with("status", json!(status))
            .with("headers", json!(headers))
            .with("body", json!(body.text))
            .with("truncated", json!(body.truncated))
            .with("timed_out", json!(body.timed_out))
            .with("stalled", json!(body.stalled))
            .with("final_url", json!(final_url))
            .with("dialled", json!(dialled)))
    })
}

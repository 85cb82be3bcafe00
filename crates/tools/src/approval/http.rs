//! Asking about an HTTP request refused because its host is not on the
//! policy's `allowed_domains` (`name.not-allowed`): the question is about
//! the exact method and URL; a "yes" sends exactly that request with that
//! one host allowed and no redirect followed (a redirect goes to another
//! URL, which is refused and can be asked about in its own call). Every
//! other check (addresses, ports, methods, headers, sizes, credentials)
//! holds as always.

use agentcaps::Policy;
use agentcaps::egress::EgressError;

use super::{Action, Asking};
use crate::http::{HttpOutput, HttpTool};
use crate::{ToolError, inputs};

/// The rule a request can be asked about.
const RULE: &str = "name.not-allowed";

/// `http_request` through `tool`, asking about a `name.not-allowed` refusal
/// of the request's own host when the policy lists that rule.
pub(crate) async fn request_asking(
    tool: &HttpTool,
    policy: &Policy,
    input: inputs::HttpRequest,
    asking: &Asking<'_>,
) -> Result<HttpOutput, ToolError> {
    if !asking.asks(RULE) {
        return tool.request(input).await;
    }
    let refused = match tool.request(input.clone()).await {
        Err(refused) => refused,
        done => return done,
    };
    let Some((host, action)) = asked_about(&refused, &input) else {
        return Err(refused);
    };
    asking.approve(refused, RULE, action).await?;
    let mut widened = policy.clone();
    widened.egress.allowed_domains = vec![host];
    widened.egress.max_redirects = 0;
    HttpTool::new(&widened)?.request(input).await
}

/// The host refused and the exact request, when the refusal is
/// `name.not-allowed` for the URL's own host (not a redirect's).
fn asked_about(refused: &ToolError, input: &inputs::HttpRequest) -> Option<(String, Action)> {
    let ToolError::Egress { source, .. } = refused else {
        return None;
    };
    let EgressError::Name { name, .. } = source.as_ref() else {
        return None;
    };
    if source.rule() != RULE {
        return None;
    }
    let url = url::Url::parse(&input.url).ok()?;
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    if host != *name {
        return None;
    }
    let method = input.method.as_deref().unwrap_or("GET");
    Some((name.clone(), Action::request(method, url.as_str())))
}

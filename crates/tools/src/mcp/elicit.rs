//! Asking the person at the MCP client: `elicitation/create` with a form
//! saying what was refused, by which rule, the exact action, and
//! `{approve: boolean}` (plus `remember` where the policy allows session
//! memory). A client that did not declare `elicitation` cannot be asked.

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, ServiceError};
use rmcp::{Peer, RoleServer};

use crate::approval::{Answer, AnswerFuture, Approver, Question};

/// An [`Approver`] that asks the client of one MCP session.
pub(crate) struct ClientApprover {
    peer: Peer<RoleServer>,
}

impl ClientApprover {
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self { peer }
    }

    async fn elicit(&self, question: &Question) -> Answer {
        if !self
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Answer::Unavailable("the MCP client did not declare elicitation".to_owned());
        }
        let requested_schema = match schema(question.may_remember) {
            Ok(schema) => schema,
            Err(e) => return Answer::Unavailable(format!("the approval form does not build: {e}")),
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question.text(),
            requested_schema,
        };
        let result = self
            .peer
            .create_elicitation_with_timeout(params, Some(question.timeout))
            .await;
        match result {
            Ok(result) => match result.action {
                ElicitationAction::Accept => approved(result.content.as_ref()),
                ElicitationAction::Decline => Answer::Decline,
                // Cancel, and any action this server does not know.
                _ => Answer::Cancel,
            },
            Err(ServiceError::Timeout { .. }) => Answer::TimedOut,
            Err(e) => Answer::Unavailable(format!("asking the MCP client failed: {e}")),
        }
    }
}

/// An accepted form approves only with `approve: true`; anything else
/// (missing, not a boolean) is a "no".
fn approved(content: Option<&serde_json::Value>) -> Answer {
    let field = |name: &str| {
        content
            .and_then(|c| c.get(name))
            .and_then(serde_json::Value::as_bool)
    };
    match field("approve") {
        Some(true) => Answer::Approve {
            remember: field("remember") == Some(true),
        },
        _ => Answer::Decline,
    }
}

fn schema(may_remember: bool) -> Result<ElicitationSchema, &'static str> {
    let builder = ElicitationSchema::builder()
        .title("Approve one refused action")
        .required_bool_with("approve", |b| {
            b.title("Approve")
                .description("Let exactly this action through, this once")
        });
    let builder = if may_remember {
        builder.optional_bool_with("remember", |b| {
            b.title("Remember")
                .description("Do not ask again about this exact action in this session")
                .with_default(false)
        })
    } else {
        builder
    };
    builder.build()
}

impl Approver for ClientApprover {
    fn ask<'a>(&'a self, question: &'a Question) -> AnswerFuture<'a> {
        Box::pin(self.elicit(question))
    }

    fn who(&self) -> String {
        self.peer.peer_info().map_or_else(
            || "unknown".to_owned(),
            |info| info.client_info.name.clone(),
        )
    }
}

//! `agentcaps run --ask`: the person at the terminal answers. Only when
//! standard input and standard error are both a terminal; otherwise no one
//! can be asked and the refusal stands at once (never a wait on a pipe).

use std::io::{IsTerminal, Write};

use agentcaps_tools::{Answer, AnswerFuture, Approver, Question};

/// Asks on the terminal: `y` approves, `s` approves for the session where
/// offered, anything else (an empty line included) declines, end of input
/// cancels.
pub(crate) struct Terminal;

impl Terminal {
    async fn prompt(question: &Question) -> Answer {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Answer::Unavailable(
                "`--ask` asks on a terminal, and standard input and standard error are not both one"
                    .to_owned(),
            );
        }
        let choices = if question.may_remember {
            "y = yes, once; s = yes, for this session; N = no"
        } else {
            "y = yes, once; N = no"
        };
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{}\n[{choices}] ", question.text());
            let _ = err.flush();
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        // A thread, so the timeout holds while the read blocks; the process
        // ends soon after either way.
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = std::io::stdin().read_line(&mut line);
            let _ = tx.send(read.map(|n| (n, line)));
        });
        match tokio::time::timeout(question.timeout, rx).await {
            Err(_) => Answer::TimedOut,
            Ok(Ok(Ok((n, line)))) if n > 0 => match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Answer::Approve { remember: false },
                "s" | "session" if question.may_remember => Answer::Approve { remember: true },
                _ => Answer::Decline,
            },
            Ok(_) => Answer::Cancel,
        }
    }
}

impl Approver for Terminal {
    fn ask<'a>(&'a self, question: &'a Question) -> AnswerFuture<'a> {
        Box::pin(Self::prompt(question))
    }

    fn who(&self) -> String {
        "terminal".to_owned()
    }
}

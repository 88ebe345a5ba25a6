//! How a command line tool says an error: its message and its causes,
//! each once.

use std::error::Error;

/// `e`'s message followed by each cause (`: cause`), leaving out a cause
/// whose text the line already holds: many errors put their cause in
/// their own message and also give it as their source, which a plain walk
/// of the chain would print twice.
pub fn said_once(e: &(dyn Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        next = cause.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("job 7: {source}")]
    struct Outer {
        source: Inner,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("deadline must be finite")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("reading the trace")]
    struct Context {
        source: Outer,
    }

    #[test]
    fn each_cause_is_said_once() {
        let e = Context {
            source: Outer { source: Inner },
        };
        assert_eq!(
            said_once(&e),
            "reading the trace: job 7: deadline must be finite"
        );
    }
}

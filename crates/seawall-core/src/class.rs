use std::fmt;

/// Whether `status` is one a classifier hands on as an answer: a 2xx, or
/// a 304 (to a conditional `GET` or `HEAD`). `ClassifyLayer` turns every
/// other status into a failure, so a response with another status that
/// reaches a layer above it says no classifier is below: the breaker then
/// counts it neither way, and the retry ladder credits its budget nothing.
pub fn is_answer_status(status: http::StatusCode) -> bool {
    status.is_success() || status == http::StatusCode::NOT_MODIFIED
}

/// What kind of failure this is: the first question every layer asks.
///
/// The class says whether sending the *same* request again can help. It does
/// not say what to do next; that is [`Action`](crate::Action), which also
/// looks at the evidence (for instance, content already delivered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// The same request may succeed soon: rate limits, overload, resets,
    /// timeouts, empty answers.
    Transient,
    /// Retrying the request unchanged cannot help: bad requests, auth, an
    /// exhausted quota, a context that is too long, unknown errors.
    Permanent,
    /// A refusal or content filter. Never retried: retrying a refusal is a
    /// search for a phrasing that defeats a control.
    Policy,
    /// The model's own mistake (malformed tool arguments, a request the model
    /// made too large): returned to the caller or the model, not retried.
    ModelFixable,
}

impl Class {
    /// The stable snake_case name of the class.
    pub const fn as_str(self) -> &'static str {
        match self {
            Class::Transient => "transient",
            Class::Permanent => "permanent",
            Class::Policy => "policy",
            Class::ModelFixable => "model_fixable",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::is_answer_status;

    #[test]
    fn only_a_2xx_or_a_304_is_an_answer_status() {
        for (status, answer) in [
            (200, true),
            (204, true),
            (206, true),
            (304, true),
            (101, false),
            (301, false),
            (429, false),
            (503, false),
        ] {
            let status = http::StatusCode::from_u16(status).unwrap();
            assert_eq!(is_answer_status(status), answer, "{status}");
        }
    }
}

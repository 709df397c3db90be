use std::fmt;

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

//! Reading a fault text: `name;key=value;...`, checked against the fault's
//! entry in the table, strictly.

use std::str::FromStr;

use super::spec::{FAULT_NAMES, FAULTS, FaultSpec, IfAbsent};
use super::{Answer, Fault, MAX_FAULT_LEN, MAX_MS, MAX_TOKENS};

/// Why a fault text was refused. `Display` names the problem; [`code`](Self::code)
/// is a stable machine-readable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultParseError {
    /// Nothing but whitespace.
    #[error("empty fault: expected a fault name such as `ok` or `status;code=503`")]
    Empty,
    /// Longer than [`MAX_FAULT_LEN`].
    #[error("fault is {len} bytes long; the limit is {max}")]
    TooLong {
        /// Length received.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The name is not one of [`FAULT_NAMES`].
    #[error("unknown fault `{name}`; expected one of: {}", FAULT_NAMES.join(", "))]
    UnknownFault {
        /// The name received (at most 64 bytes of it).
        name: String,
    },
    /// A parameter without `=`, or with an empty key.
    #[error("malformed parameter `{segment}` in fault `{fault}`: expected key=value")]
    MalformedParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The offending segment (at most 64 bytes of it).
        segment: String,
    },
    /// A parameter the fault does not take.
    #[error("fault `{fault}` does not take parameter `{param}`; it takes: {allowed}")]
    UnknownParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The parameter received.
        param: String,
        /// The parameters it takes.
        allowed: String,
    },
    /// A parameter given twice.
    #[error("parameter `{param}` given twice in fault `{fault}`")]
    DuplicateParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The repeated parameter.
        param: String,
    },
    /// A required parameter is absent.
    #[error("fault `{fault}` needs parameter `{param}`")]
    MissingParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The missing parameter.
        param: &'static str,
    },
    /// A value that does not parse or is out of range.
    #[error(
        "invalid value `{value}` for parameter `{param}` in fault `{fault}`: expected {expected}"
    )]
    InvalidValue {
        /// The fault being parsed.
        fault: &'static str,
        /// The parameter.
        param: &'static str,
        /// The value received (at most 64 bytes of it).
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
}

impl FaultParseError {
    /// A stable code for the error, e.g. `unknown_fault`.
    pub fn code(&self) -> &'static str {
        match self {
            FaultParseError::Empty => "empty_fault",
            FaultParseError::TooLong { .. } => "fault_too_long",
            FaultParseError::UnknownFault { .. } => "unknown_fault",
            FaultParseError::MalformedParam { .. } => "malformed_param",
            FaultParseError::UnknownParam { .. } => "unknown_param",
            FaultParseError::DuplicateParam { .. } => "duplicate_param",
            FaultParseError::MissingParam { .. } => "missing_param",
            FaultParseError::InvalidValue { .. } => "invalid_value",
        }
    }
}

/// Echoes of user input in error messages are cut to this many bytes.
const ECHO_MAX: usize = 64;

fn echo(s: &str) -> String {
    seawall_internal::excerpt(s, ECHO_MAX).to_owned()
}

/// The parameters of one fault text, checked against what its spec takes.
/// A parameter left out reads as its default from the spec.
pub(crate) struct Params<'a> {
    spec: &'static FaultSpec,
    items: Vec<(&'static str, &'a str)>,
}

impl<'a> Params<'a> {
    fn parse(
        spec: &'static FaultSpec,
        segments: impl Iterator<Item = &'a str>,
    ) -> Result<Self, FaultParseError> {
        let fault = spec.name;
        let mut items: Vec<(&'static str, &'a str)> = Vec::new();
        for segment in segments.map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = match segment.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => (k.trim(), v.trim()),
                _ => {
                    return Err(FaultParseError::MalformedParam {
                        fault,
                        segment: echo(segment),
                    });
                }
            };
            let Some(param) = spec.param(key) else {
                return Err(FaultParseError::UnknownParam {
                    fault,
                    param: echo(key),
                    allowed: if spec.params.is_empty() {
                        "no parameters".to_owned()
                    } else {
                        spec.params
                            .iter()
                            .map(|p| p.key)
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                });
            };
            if items.iter().any(|(k, _)| *k == key) {
                return Err(FaultParseError::DuplicateParam {
                    fault,
                    param: key.to_owned(),
                });
            }
            items.push((param.key, value));
        }
        Ok(Params { spec, items })
    }

    /// The value given for `key`, else its default.
    fn value(&self, key: &str) -> Option<&'a str> {
        let given = self.items.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        given.or_else(|| match self.spec.param(key)?.if_absent {
            IfAbsent::Default(value) => Some(value),
            _ => None,
        })
    }

    pub(crate) fn invalid(
        &self,
        param: &'static str,
        value: &str,
        expected: &'static str,
    ) -> FaultParseError {
        FaultParseError::InvalidValue {
            fault: self.spec.name,
            param,
            value: echo(value),
            expected,
        }
    }

    pub(crate) fn missing(&self, param: &'static str) -> FaultParseError {
        FaultParseError::MissingParam {
            fault: self.spec.name,
            param,
        }
    }

    /// `key` read with `read`, or `None` when it is neither given nor defaulted.
    pub(crate) fn get<T>(
        &self,
        key: &'static str,
        read: fn(&str) -> Option<T>,
        expected: &'static str,
    ) -> Result<Option<T>, FaultParseError> {
        self.value(key)
            .map(|v| read(v).ok_or_else(|| self.invalid(key, v, expected)))
            .transpose()
    }

    /// `key` read with `read`; missing when it is neither given nor defaulted.
    pub(crate) fn need<T>(
        &self,
        key: &'static str,
        read: fn(&str) -> Option<T>,
        expected: &'static str,
    ) -> Result<T, FaultParseError> {
        self.get(key, read, expected)?
            .ok_or_else(|| self.missing(key))
    }

    pub(crate) fn tokens(&self, key: &'static str) -> Result<u32, FaultParseError> {
        self.need(
            key,
            |v| v.parse().ok().filter(|n| *n <= MAX_TOKENS),
            "an integer 0..=100000",
        )
    }

    pub(crate) fn ms(&self, key: &'static str) -> Result<u64, FaultParseError> {
        self.need(key, read_ms, MS_EXPECTED)
    }

    pub(crate) fn opt_ms(&self, key: &'static str) -> Result<Option<u64>, FaultParseError> {
        self.get(key, read_ms, MS_EXPECTED)
    }

    pub(crate) fn flag(&self, key: &'static str) -> Result<bool, FaultParseError> {
        self.need(key, read_flag, FLAG_EXPECTED)
    }

    pub(crate) fn opt_flag(&self, key: &'static str) -> Result<Option<bool>, FaultParseError> {
        self.get(key, read_flag, FLAG_EXPECTED)
    }

    /// An answer of `tokens_key` tokens, `delay_ms` apart.
    pub(crate) fn answer(&self, tokens_key: &'static str) -> Result<Answer, FaultParseError> {
        Ok(Answer {
            tokens: self.tokens(tokens_key)?,
            delay_ms: self.ms("delay_ms")?,
        })
    }

    /// A `*_after` fault: the `tokens` before the cut, and the `total` answer cut.
    pub(crate) fn cut(&self) -> Result<(u32, Answer), FaultParseError> {
        Ok((self.tokens("tokens")?, self.answer("total")?))
    }
}

const MS_EXPECTED: &str = "milliseconds 0..=3600000";
const FLAG_EXPECTED: &str = "true, false, 1 or 0";

fn read_ms(v: &str) -> Option<u64> {
    v.parse().ok().filter(|n| *n <= MAX_MS)
}

fn read_flag(v: &str) -> Option<bool> {
    match v {
        "1" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    }
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() > MAX_FAULT_LEN {
            return Err(FaultParseError::TooLong {
                len: s.len(),
                max: MAX_FAULT_LEN,
            });
        }
        let mut segments = s.split(';');
        let name = segments.next().unwrap_or_default().trim();
        if name.is_empty() {
            return if s.trim().is_empty() {
                Err(FaultParseError::Empty)
            } else {
                Err(FaultParseError::UnknownFault {
                    name: String::new(),
                })
            };
        }
        let Some(spec) = FAULTS.iter().find(|spec| spec.name == name) else {
            return Err(FaultParseError::UnknownFault { name: echo(name) });
        };
        (spec.parse)(&Params::parse(spec, segments)?)
    }
}

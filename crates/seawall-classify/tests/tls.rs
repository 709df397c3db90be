//! A TLS handshake refused for good is a permanent failure, not a
//! transport error retried: the same on every attempt, a configuration to
//! fix. An alert about the moment stays transient.
#![cfg(feature = "rustls")]

use std::io;

use rustls::{AlertDescription, CertificateError, Error, PeerIncompatible};
use seawall_classify::transport_failure;
use seawall_core::{Class, Code};

/// `tls` as connectors report it: inside an io error, inside another
/// (hyper-rustls wraps it twice).
fn wrapped(tls: Error) -> io::Error {
    io::Error::other(io::Error::new(io::ErrorKind::InvalidData, tls))
}

#[test]
fn a_refused_handshake_is_permanent() {
    for tls in [
        Error::InvalidCertificate(CertificateError::Expired),
        Error::InvalidCertificate(CertificateError::UnknownIssuer),
        Error::NoCertificatesPresented,
        Error::PeerIncompatible(PeerIncompatible::NoCipherSuitesInCommon),
        Error::AlertReceived(AlertDescription::HandshakeFailure),
        Error::AlertReceived(AlertDescription::UnknownCA),
        Error::AlertReceived(AlertDescription::ProtocolVersion),
        Error::AlertReceived(AlertDescription::CertificateRequired),
    ] {
        let said = tls.to_string();
        let failure = transport_failure(&wrapped(tls)).expect("classified");
        assert_eq!(
            (failure.class(), failure.code()),
            (Class::Permanent, Code::Transport),
            "{said}"
        );
    }
}

#[test]
fn an_alert_about_the_moment_stays_transient() {
    let failure = transport_failure(&wrapped(Error::AlertReceived(
        AlertDescription::InternalError,
    )));
    // Not refused: read as the io error it came in (invalid data is no
    // connection failure the reader knows), never permanent.
    assert!(
        failure
            .as_ref()
            .is_none_or(|failure| failure.class() != Class::Permanent),
        "{failure:?}"
    );
}

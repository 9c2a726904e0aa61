//! Test certificates made at test time (a CA, a server certificate for
//! 127.0.0.1, a client certificate) and a node serving TLS with them.

use std::path::{Path, PathBuf};

use ebb_config::TlsMode;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

use super::TestNode;

/// A CA, a server certificate for 127.0.0.1 and a client certificate, as
/// PEM files in `dir`: (ca.pem, server.pem with its key, client.pem with its key).
pub fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        format!("{}{}", cert.pem(), key.serialize_pem())
    };
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    (
        write("ca.pem", ca.pem()),
        write(
            "server.pem",
            leaf(vec!["127.0.0.1".into(), "localhost".into()]),
        ),
        write("client.pem", leaf(vec!["client".into()])),
    )
}

pub fn tls_node(mode: TlsMode, dir: &Path, with_ca: bool) -> TestNode {
    let (ca, server, _) = certificates(dir);
    TestNode::start_with(
        |c| {
            c.net.tls.mode = mode;
            c.net.tls.certificate_key_file = server;
            if with_ca {
                c.net.tls.ca_file = ca;
            }
        },
        None,
    )
}

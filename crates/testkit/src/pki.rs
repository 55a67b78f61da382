//! A test certificate authority: a CA, server certificates for 127.0.0.1 and
//! localhost (valid, or expired), and client certificates, written as PEM files into
//! a directory for the programs under test to read.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// A CA and where its files are.
pub struct TestCa {
    dir: PathBuf,
    name: String,
    issuer: Issuer<'static, KeyPair>,
    /// The CA's certificate (PEM), what clients trust.
    pub ca: PathBuf,
}

/// A certificate and its key, as PEM files.
#[derive(Debug, Clone)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

impl TestCa {
    /// A new CA named `name`, its certificate in `dir/NAME-ca.pem`.
    pub fn new(dir: &Path, name: &str) -> TestCa {
        std::fs::create_dir_all(dir).expect("pki dir");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params
            .distinguished_name
            .push(DnType::CommonName, format!("jscope test CA {name}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("ca key");
        let cert = params.self_signed(&key).expect("ca cert");
        let ca = dir.join(format!("{name}-ca.pem"));
        write(&ca, &cert.pem());
        TestCa {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            issuer: Issuer::new(params, key),
            ca,
        }
    }

    fn issue(&self, file: &str, params: CertificateParams) -> CertFiles {
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        let files = CertFiles {
            cert: self.dir.join(format!("{}-{file}.pem", self.name)),
            key: self.dir.join(format!("{}-{file}-key.pem", self.name)),
        };
        write(&files.cert, &cert.pem());
        write(&files.key, &key.serialize_pem());
        files
    }

    fn server_params(cn: &str) -> CertificateParams {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string()]).expect("server params");
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params
    }

    /// A server certificate for `localhost` and `127.0.0.1`, valid now; `file` names
    /// its files, `cn` goes in its subject (to tell certificates apart).
    pub fn server(&self, file: &str, cn: &str) -> CertFiles {
        self.issue(file, Self::server_params(cn))
    }

    /// A server certificate that expired in 2021.
    pub fn expired_server(&self, file: &str) -> CertFiles {
        let mut params = Self::server_params("expired");
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        self.issue(file, params)
    }

    /// A client certificate.
    pub fn client(&self, file: &str, cn: &str) -> CertFiles {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(file, params)
    }
}

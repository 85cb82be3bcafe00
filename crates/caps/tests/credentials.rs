//! `[credentials.NAME]` and `[egress] root_certificates`: checked at load
//! with the line to fix, listed by source and hosts, never by value.

use agentcaps::{CredentialSource, Policy, PolicyError};

const VALUE: &str = "ghp_FileValue0123456789abcdefABCDEF0123";

fn load(text: &str, dir: &std::path::Path) -> Result<Policy, PolicyError> {
    Policy::from_toml(text, dir)
}

fn line_and_key(e: &PolicyError) -> (usize, String) {
    match e {
        PolicyError::InvalidValue { key, line, .. } | PolicyError::UnknownKey { key, line } => {
            (*line, key.clone())
        }
        other => panic!("not a keyed error: {other:?}"),
    }
}

fn dir_with_token() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), format!("{VALUE}\n")).unwrap();
    dir
}

fn test_ca_pem() -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

#[test]
fn a_file_credential_loads_relative_to_the_policy_and_reaches_the_egress_policy() {
    let dir = dir_with_token();
    let policy = load(
        "[credentials.github]\nfrom_file = \"token\"\nenv = \"GITHUB_TOKEN\"\nhosts = [\"github.com\", \"*.github.com\"]\nmethods = [\"GET\"]\npaths = [\"/repos/acme/**\"]\n",
        dir.path(),
    )
    .unwrap();
    let entry = &policy.credentials()[0];
    assert_eq!(entry.name, "github");
    assert_eq!(
        entry.source,
        CredentialSource::File(dir.path().join("token"))
    );
    assert_eq!(entry.credential.hosts(), ["github.com", "*.github.com"]);
    assert_eq!(entry.credential.env(), Some("GITHUB_TOKEN"));
    let egress = policy.egress_policy().unwrap();
    assert_eq!(egress.credentials().len(), 1);
    assert!(egress.credentials()[0].binds("api.github.com"));
    // Never shown: not in Debug, not in the effective policy.
    let shown = format!("{policy:?} {egress:?} {}", policy.effective_toml());
    assert!(!shown.contains("FileValue"), "{shown}");
    let effective = policy.effective_toml();
    assert!(effective.contains("[credentials.github]"), "{effective}");
    assert!(effective.contains("from_file = "), "{effective}");
    assert!(
        effective.contains("hosts = [\"github.com\", \"*.github.com\"]"),
        "{effective}"
    );
}

#[test]
fn a_variable_credential_takes_the_variable_name_for_commands() {
    // PATH is set wherever tests run; its value is the secret here.
    let dir = tempfile::tempdir().unwrap();
    let policy = load(
        "[credentials.path]\nfrom_env = \"PATH\"\nhosts = [\"example.com\"]\n",
        dir.path(),
    )
    .unwrap();
    let entry = &policy.credentials()[0];
    assert_eq!(entry.source, CredentialSource::Env("PATH".to_owned()));
    assert_eq!(entry.credential.env(), Some("PATH"));
}

#[test]
fn every_mistake_is_an_error_at_load_with_its_line() {
    let dir = dir_with_token();
    let cases: &[(&str, usize, &str)] = &[
        (
            "[files]\n\n[credentials.a]\nhosts = [\"x.com\"]\n",
            3,
            "credentials.a",
        ),
        (
            "[credentials.a]\nfrom_file = \"token\"\nfrom_env = \"PATH\"\nhosts = [\"x.com\"]\n",
            1,
            "credentials.a",
        ),
        (
            "[credentials.a]\nhosts = [\"x.com\"]\nfrom_env = \"AGENTCAPS_SURELY_UNSET_VARIABLE\"\n",
            3,
            "credentials.a.from_env",
        ),
        (
            "[credentials.a]\nhosts = [\"x.com\"]\n\nfrom_file = \"missing-token\"\n",
            4,
            "credentials.a.from_file",
        ),
        (
            "[credentials.a]\nfrom_file = \"token\"\nhostz = [\"x.com\"]\n",
            3,
            "credentials.a.hostz",
        ),
        (
            "[credentials.a]\nfrom_file = \"token\"\nhosts = []\n",
            3,
            "credentials.a.hosts",
        ),
        (
            "[credentials.a]\nfrom_file = \"token\"\nhosts = [\"x.com\"]\ninject = \"cookie\"\n",
            4,
            "credentials.a.inject",
        ),
        (
            "[credentials.a]\nfrom_file = \"token\"\nhosts = [\"x.com\"]\npaths = [\"/a/../b\"]\n",
            4,
            "credentials.a.paths",
        ),
        (
            "[egress]\nroot_certificates = [\n  \"missing.pem\",\n]\n",
            3,
            "egress.root_certificates",
        ),
        (
            "[egress]\nroot_certificates = [\"token\"]\n",
            2,
            "egress.root_certificates",
        ),
    ];
    for (text, line, key) in cases {
        let e = load(text, dir.path()).expect_err(text);
        assert_eq!(line_and_key(&e), (*line, (*key).to_owned()), "{text}: {e}");
        assert!(!e.to_string().contains("FileValue"), "{e}");
    }
}

#[test]
fn root_certificates_are_trusted_and_listed_as_a_loosening() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("internal-ca.pem"), test_ca_pem()).unwrap();
    let policy = load(
        "[egress]\nroot_certificates = [\"internal-ca.pem\"]\n",
        dir.path(),
    )
    .unwrap();
    assert_eq!(
        policy.root_certificates(),
        [dir.path().join("internal-ca.pem").as_path()]
    );
    let egress = policy.egress_policy().unwrap();
    assert!(
        egress
            .loosenings()
            .iter()
            .any(|l| l.starts_with("root_certificates: 1 CA certificate(s)")),
        "{:?}",
        egress.loosenings()
    );
    let effective = policy.effective_toml();
    assert!(
        effective.contains("# LOOSENED: root_certificates: 1 CA certificate(s)"),
        "{effective}"
    );
    assert!(effective.contains("policy text:2"), "{effective}");
}

#[cfg(unix)]
#[test]
fn a_credential_file_inside_a_root_is_refused_at_load_however_it_is_reached() {
    // Inside a root the file tools and every command could read the value
    // itself; through a link to a root, or a root that is a link, too.
    let dir = dir_with_token();
    std::fs::create_dir(dir.path().join("project")).unwrap();
    std::fs::write(dir.path().join("project/token"), format!("{VALUE}\n")).unwrap();
    std::os::unix::fs::symlink("project", dir.path().join("alias")).unwrap();
    let cases = [
        ("[files]\nallowed = [\"project\"]\n", "project/token"),
        ("[files]\nread_only = [\"project\"]\n", "project/token"),
        ("[files]\nallowed = [\"alias\"]\n", "project/token"),
        ("[files]\nallowed = [\"project\"]\n", "alias/token"),
        ("[files]\nallowed = [\".\"]\n", "token"),
    ];
    for (files, source) in cases {
        let text =
            format!("{files}\n[credentials.a]\nhosts = [\"x.com\"]\nfrom_file = \"{source}\"\n");
        let e = load(&text, dir.path()).expect_err(&text);
        assert_eq!(
            line_and_key(&e),
            (6, "credentials.a.from_file".to_owned()),
            "{text}: {e}"
        );
        assert!(e.to_string().contains("outside every root"), "{e}");
        assert!(!e.to_string().contains("FileValue"), "{e}");
    }
    // Beside the root, it loads.
    let text = "[files]\nallowed = [\"project\"]\n\n[credentials.a]\nhosts = [\"x.com\"]\nfrom_file = \"token\"\n";
    load(text, dir.path()).expect("a file outside the roots");
}

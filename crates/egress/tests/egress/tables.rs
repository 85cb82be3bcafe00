//! Table-driven judgement: every `tests/data/*.toml` case (input, expected
//! decision, rule, why) through `EgressPolicy::check_url`.

use std::path::Path;

use agentcaps_egress::{EgressPolicyConfig, parse_method};
use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    #[serde(default)]
    policy: EgressPolicyConfig,
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    url: String,
    #[serde(default = "get")]
    method: String,
    expect: String,
    rule: Option<String>,
    why: String,
}

fn get() -> String {
    "GET".to_owned()
}

fn run_table(file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("table file");
    let table: Table = toml::from_str(&text).expect("table parses");
    let policy = table.policy.build().expect("table policy builds");
    assert!(!table.case.is_empty(), "{file} has no cases");
    let mut failures = Vec::new();
    for case in &table.case {
        let verdict = parse_method(&case.method).and_then(|m| policy.check_url(&case.url, &m));
        let problem = match (case.expect.as_str(), &verdict) {
            ("allow", Ok(_)) => None,
            ("allow", Err(e)) => Some(format!("refused ({}): {e}", e.rule())),
            ("deny", Ok(v)) => Some(format!("allowed as {}", v.url())),
            ("deny", Err(e)) => match &case.rule {
                Some(rule) if rule != e.rule() => {
                    Some(format!("refused by {} instead of {rule}: {e}", e.rule()))
                }
                _ => None,
            },
            (other, _) => Some(format!("bad expectation {other:?}")),
        };
        if let Some(p) = problem {
            failures.push(format!("{:?} [{}] {p}", case.url, case.why));
        }
    }
    assert!(
        failures.is_empty(),
        "{file}: {} of {} cases failed:\n{}",
        failures.len(),
        table.case.len(),
        failures.join("\n")
    );
}

#[test]
fn ip_literal_spellings_are_judged_as_the_address_they_denote() {
    run_table("ip_literals.toml");
}

#[test]
fn every_special_range_is_denied_at_its_boundaries_and_not_beyond() {
    run_table("ranges.toml");
}

#[test]
fn scheme_userinfo_port_and_method_rules_hold() {
    run_table("url_rules.toml");
}

#[test]
fn special_use_and_single_label_names_are_refused_before_any_query() {
    run_table("names.toml");
}

#[test]
fn domain_lists_compare_normalized_names_and_resist_homographs() {
    run_table("domain_lists.toml");
}

#[test]
fn cidr_lists_apply_to_what_an_address_denotes_in_every_family() {
    run_table("cross_family.toml");
}

#[test]
fn cidr_lists_apply_across_families_with_nat64_decoding_on() {
    run_table("cross_family_nat64.toml");
}

#[test]
fn every_table_in_the_data_directory_is_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "cross_family.toml",
            "cross_family_nat64.toml",
            "domain_lists.toml",
            "ip_literals.toml",
            "names.toml",
            "ranges.toml",
            "url_rules.toml"
        ]
    );
}

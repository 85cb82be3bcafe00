//! The header rewrite under arbitrary header sets (the invariants of
//! `rewrite_oracle`, also the fuzz target's).

use proptest::prelude::*;

use crate::rewrite_oracle::{case, credentials, violations};

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn the_value_goes_only_where_it_is_bound_and_no_header_is_lost(
        data in proptest::collection::vec(
            prop_oneof![
                4 => any::<u8>(),
                2 => Just(0xffu8),
                1 => Just(0xfeu8),
                1 => Just(0xfdu8),
                1 => Just(0xfcu8),
                2 => Just(b'\n'),
                2 => Just(b':'),
                1 => Just(b'A'),
            ],
            3..80,
        )
    ) {
        let run = credentials();
        let placeholder = run.placeholder("api").unwrap().to_owned();
        if let Some(case) = case(&data, &placeholder)
            && let Some(problem) = violations(&run, &case)
        {
            prop_assert!(false, "{problem}");
        }
    }
}

/// An input the fuzz target found, which once broke an invariant.
#[test]
fn the_fuzzers_finding_holds() {
    // The real value itself (spelled out, not a placeholder) in a header
    // toward the bound host on a path outside the binding: it was passed
    // on as it came.
    let value_outside_the_paths: &[u8] = &[
        0, 63, 57, 58, 10, 57, 58, 10, 246, 58, 10, 58, 10, 58, 10, 53, 58, 10, 214, 12, 12, 12,
        12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 93, 12, 12, 12, 12, 12, 12, 58, 10, 58, 10, 57, 58,
        116, 111, 107, 95, 82, 101, 97, 108, 86, 97, 108, 117, 101, 70, 111, 114, 84, 104, 101, 79,
        114, 97, 99, 108, 101, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 10, 214,
        58, 10, 58, 10, 10, 57, 58, 10, 58, 64, 214, 58, 58, 10, 56, 57,
    ];
    let run = credentials();
    let placeholder = run.placeholder("api").unwrap().to_owned();
    let case = case(value_outside_the_paths, &placeholder).expect("a case");
    assert_eq!(violations(&run, &case), None);
}

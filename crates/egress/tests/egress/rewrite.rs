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

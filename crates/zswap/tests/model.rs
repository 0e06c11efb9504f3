//! Model-based test: random swap-out / swap-in / invalidate / reclaim sequences against a
//! HashMap of what each swap offset must hold, on every allocator and both incompressible
//! policies, with a pool small enough that the limit, the hysteresis and the shrink worker all
//! take part.

mod common;

use std::collections::HashMap;

use common::*;
use proptest::prelude::*;
use zmem_zswap::{Incompressible, SwapOut, ZswapConfig};

const SLOTS: u64 = 24;

#[derive(Debug, Clone)]
enum Op {
    SwapOut { offset: u64, kind: u8, seed: u64 },
    SwapIn { offset: u64 },
    Invalidate { offset: u64 },
    WritebackOne,
    ShrinkerScan(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SLOTS, 0u8..3, any::<u64>())
            .prop_map(|(offset, kind, seed)| Op::SwapOut { offset, kind, seed }),
        3 => (0..SLOTS).prop_map(|offset| Op::SwapIn { offset }),
        1 => (0..SLOTS).prop_map(|offset| Op::Invalidate { offset }),
        1 => Just(Op::WritebackOne),
        1 => (0u64..6).prop_map(Op::ShrinkerScan),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn zswap_and_its_swap_device_behave_like_a_map(
        zpool in prop::sample::select(vec!["zsmalloc", "zbud", "z3fold"]),
        as_is in any::<bool>(),
        max_pct in 5u32..40,
        accept in 50u32..=100,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let mut cfg = ZswapConfig {
            incompressible: if as_is { Incompressible::StoreAsIs } else { Incompressible::Reject },
            ..config(zpool, 100, max_pct, accept)
        };
        cfg.module.shrinker_enabled = true;
        let s = build_layer(&cfg, SLOTS);
        let z = s.zswap().unwrap();
        let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut out = vec![0u8; PS];
        for op in ops {
            match op {
                Op::SwapOut { offset, kind, seed } => {
                    let p = page(kind, seed);
                    let w = s.swap_out(offset, &p, &mut ()).unwrap();
                    prop_assert_eq!(w == SwapOut::Zswap, z.contains(offset));
                    model.insert(offset, p);
                }
                Op::SwapIn { offset } => {
                    let Some(want) = model.remove(&offset) else { continue };
                    let w = s.swap_in(offset, &mut out, &mut ()).unwrap();
                    prop_assert_eq!(&out, &want, "offset {} from {:?}", offset, w);
                    prop_assert!(!z.contains(offset), "the slot was freed");
                }
                Op::Invalidate { offset } => {
                    let had = z.contains(offset);
                    prop_assert_eq!(z.invalidate(offset), had);
                    model.remove(&offset);
                }
                Op::WritebackOne => {
                    z.writeback_one();
                }
                Op::ShrinkerScan(n) => {
                    z.shrinker_scan(n);
                }
            }
            let s = z.stats();
            prop_assert_eq!(s.stored_pages, z.nr_entries() as u64);
            prop_assert!(s.stored_incompressible_pages <= s.stored_pages);
            prop_assert!((0..SLOTS).filter(|&o| z.contains(o)).all(|o| model.contains_key(&o)));
            if !as_is || zpool == "zbud" {
                prop_assert_eq!(s.stored_incompressible_pages, 0);
            }
        }
        // Everything still swapped comes back intact, from wherever it is.
        for (offset, want) in model {
            s.read(offset, &mut out, &mut ()).unwrap();
            prop_assert_eq!(out.as_slice(), want.as_slice(), "offset {}", offset);
        }
        prop_assert_eq!(z.stats().stored_pages, 0);
    }
}

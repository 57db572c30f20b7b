//! A two-prime key's confirmation rounds and its pairwise test's CRT
//! powers, all in the lanes of one or two passes.
//!
//! A search that runs each prime's Miller–Rabin rounds as soon as the
//! prime passes its first test fills five of a register's eight lanes
//! with RSA-2048's five rounds, twice, and then runs the pairwise test's
//! two powers 2^(d_i) mod r_i apart. Here the search stops at the first
//! test (the base-2 Fermat test), and the ten rounds and two powers run
//! together: eight lanes and four (`arith::lanes::exps_secret`, each
//! lane its own modulus, base and exponent), in parallel on two threads.
//!
//! The answer is the search's: a candidate's rounds use the bases the
//! search would have drawn for it (`prime::search::mr_bases`), and a
//! candidate that fails one is dropped and the search goes on after the
//! last candidate tested, keeping the other — the two lowest-numbered
//! candidates that pass every test, as the search defines its answer.

use std::sync::atomic::AtomicBool;

use rug::Integer;

use crate::arith::lanes::{exps_secret, LaneExp, LANES};
use crate::error::{Error, Result};
use crate::gmp::sec;
use crate::prime::fermat::secret_r_and_r2_into;
use crate::prime::search::{mr_bases, Generation, WorkerJob};
use crate::prime::stream::Seed;
use crate::prime::Stats;
use crate::secure::SecretVec;

/// Each lane's item of a pass, with the round's verdict or the power.
type LaneResults = Vec<(Item, bool, Option<Integer>)>;

/// What a pass's lane does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Item {
    /// Round `round` of prime `prime`.
    Round { prime: usize, round: u32 },
    /// The pairwise test's power 2^(d_i) mod r_i of prime `prime`.
    Power { prime: usize },
}

/// The lanes of the passes: each prime's `rounds` rounds, then the two
/// powers, eight to a pass; a last pass of at most four runs in the
/// cheaper four-lane registers.
fn passes(rounds: u32) -> Vec<Vec<Item>> {
    let items: Vec<Item> = (0..2)
        .flat_map(|prime| (0..rounds).map(move |round| Item::Round { prime, round }))
        .chain((0..2).map(|prime| Item::Power { prime }))
        .collect();
    items.chunks(LANES).map(<[Item]>::to_vec).collect()
}

/// Whether [`confirm`] takes the two primes `ps`: two of one limb count
/// and digit count that `arith::lanes::exps_secret` takes (RSA-512 to
/// RSA-2048's primes on a CPU with AVX-512 IFMA).
pub(super) fn applies(k: u32) -> bool {
    crate::arith::lanes::rounds_take(k)
}

/// The verdicts of `rounds` confirmation rounds on each of the two
/// secret primes `ps` (candidates `indices` of the search: their bases
/// are the stream's for those indices) and the pairwise test's CRT
/// powers 2^(exps_i) mod ps_i, on the generation's workers. Per prime,
/// whether it passed every round; the powers (in the secret arena) when
/// both did. Counts the rounds as exponentiations, and the primes as
/// found when both pass.
pub(super) fn confirm(
    generation: &mut Generation<'_, '_>,
    ps: &[Integer; 2],
    indices: [u64; 2],
    rounds: u32,
    exps: &[Integer; 2],
) -> Result<([bool; 2], Option<[Integer; 2]>)> {
    // R and R² mod each prime by the constant-time division, once for
    // all passes, in the secret arena.
    let rr = ps.each_ref().map(|p| {
        let len = p.as_limbs().len();
        let (mut r, mut r2) = (SecretVec::zeroed(len), SecretVec::zeroed(len));
        secret_r_and_r2_into(p.as_limbs(), &mut r, &mut r2);
        (r, r2)
    });
    let rr = &rr;
    let jobs: Vec<WorkerJob<'_, LaneResults>> = passes(rounds)
        .into_iter()
        .map(|items| -> WorkerJob<'_, _> {
            Box::new(move |seed: &Seed, stats: &mut Stats| {
                let rounds_here = items
                    .iter()
                    .filter(|i| matches!(i, Item::Round { .. }))
                    .count();
                stats.exponentiations += rounds_here as u64;
                pass(seed, &items, ps, indices, exps, rr)
            })
        })
        .collect();
    let results = generation.run_on_workers(jobs, 2)?;
    let mut passed = [true; 2];
    let mut powers: [Option<Integer>; 2] = [None, None];
    for (item, ok, power) in results.into_iter().flatten() {
        match item {
            Item::Round { prime, .. } => passed[prime] &= ok,
            Item::Power { prime } => powers[prime] = power,
        }
    }
    if passed != [true; 2] {
        // Neither is a prime of the answer yet (the one that passed is
        // confirmed again with its new partner).
        generation.withdraw_found(2);
        return Ok((passed, None));
    }
    let [Some(a), Some(b)] = powers else {
        return Err(Error::Internal);
    };
    Ok((passed, Some([a, b])))
}

/// One pass: the lanes of `items` (`rr`: R and R² mod each prime), the
/// bases drawn here; the verdict of each round, the value of each power.
fn pass(
    seed: &Seed,
    items: &[Item],
    ps: &[Integer; 2],
    indices: [u64; 2],
    exps: &[Integer; 2],
    rr: &[(SecretVec<u64>, SecretVec<u64>); 2],
) -> Result<LaneResults> {
    let len = ps[0].as_limbs().len();
    // Each prime's rounds in this pass (consecutive), and their bases as
    // the search draws them (their limbs are wiped when GMP frees them,
    // `gmp::alloc`).
    let rounds = |prime: usize| {
        let mut of = items.iter().filter_map(|i| match *i {
            Item::Round { prime: p, round } if p == prime => Some(round),
            _ => None,
        });
        let lo = of.next()?;
        Some(lo..of.next_back().unwrap_or(lo) + 1)
    };
    let ranges = [rounds(0), rounds(1)];
    let bases: Vec<Vec<Integer>> = (0..2)
        .map(|prime| match &ranges[prime] {
            Some(r) => mr_bases(seed, indices[prime], r.clone(), &ps[prime], true),
            None => Vec::new(),
        })
        .collect();
    let first_round = |prime: usize| ranges[prime].as_ref().map_or(0, |r| r.start);
    let two = sec::padded(&Integer::from(2u32), len);
    let es = [0, 1].map(|i| sec::padded(&exps[i], len));
    let mut outs: Vec<crate::secure::SecretVec<u64>> = items
        .iter()
        .filter(|i| matches!(i, Item::Power { .. }))
        .map(|_| sec::padded(&Integer::new(), len))
        .collect();
    let never = AtomicBool::new(false);
    let lanes: Vec<LaneExp<'_>> = items
        .iter()
        .map(|item| match *item {
            Item::Round { prime, round } => LaneExp {
                n: ps[prime].as_limbs(),
                r: &rr[prime].0,
                r2: &rr[prime].1,
                base: bases[prime][(round - first_round(prime)) as usize].as_limbs(),
                power: None,
            },
            Item::Power { prime } => LaneExp {
                n: ps[prime].as_limbs(),
                r: &rr[prime].0,
                r2: &rr[prime].1,
                base: &two,
                power: Some(&es[prime]),
            },
        })
        .collect();
    let mut out_refs: Vec<&mut [u64]> = outs.iter_mut().map(|o| &mut o[..]).collect();
    let verdicts = exps_secret(&lanes, &mut out_refs, &never).ok_or(Error::Internal)?;
    let mut powers = outs
        .iter()
        .map(|o| Integer::from_digits(o, rug::integer::Order::Lsf));
    Ok(items
        .iter()
        .enumerate()
        .map(|(l, &item)| match item {
            Item::Round { .. } => (item, verdicts[l] == 1, None),
            Item::Power { .. } => (item, true, powers.next()),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RSA-2048's ten rounds and two powers fill a pass of eight and one
    /// of four; RSA-512's 34 rounds four of eight and one of four.
    #[test]
    fn the_passes_fill_eight_lanes_then_four() {
        let sizes = |r| passes(r).iter().map(Vec::len).collect::<Vec<_>>();
        assert_eq!(sizes(5), [8, 4]);
        assert_eq!(sizes(8), [8, 8, 2]);
        assert_eq!(sizes(17), [8, 8, 8, 8, 4]);
        let p = passes(5);
        assert_eq!(p[0][5], Item::Round { prime: 1, round: 0 });
        assert_eq!(
            p[1][2..],
            [Item::Power { prime: 0 }, Item::Power { prime: 1 }]
        );
    }
}

//! Work over many files, on a few threads: a large patch is planned,
//! staged and cleaned up in parallel (results always in patch order).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// From this many files on, planning, staging and releasing run on
/// several threads.
pub(crate) const PARALLEL_FROM: usize = 16;
/// At most this many threads work on one patch.
const MAX_THREADS: usize = 4;

/// How many threads to work on `count` files with.
pub(crate) fn threads_for(count: usize) -> usize {
    static AVAILABLE: OnceLock<usize> = OnceLock::new();
    if count < PARALLEL_FROM {
        return 1;
    }
    let available = *AVAILABLE.get_or_init(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    available.clamp(1, MAX_THREADS)
}

/// Runs `work` on every item, in contiguous chunks on up to
/// [`threads_for`] threads (one of them the caller's), and returns the
/// results in order. Once `work` fails on an item (`stop` says so), items
/// after it that have not started are skipped (`None`); every item before
/// the earliest failure is always run, so the first failure in order is
/// the same whatever the threads' timing.
pub(crate) fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    stop: impl Fn(&R) -> bool + Sync,
    work: impl Fn(T) -> R + Sync,
) -> Vec<Option<R>> {
    let threads = threads_for(items.len());
    let earliest_failure = AtomicUsize::new(usize::MAX);
    let run = |chunk: Vec<(usize, T)>| -> Vec<Option<R>> {
        chunk
            .into_iter()
            .map(|(at, item)| {
                if at > earliest_failure.load(Ordering::Relaxed) {
                    return None;
                }
                let result = work(item);
                if stop(&result) {
                    earliest_failure.fetch_min(at, Ordering::Relaxed);
                }
                Some(result)
            })
            .collect()
    };
    let items: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    if threads <= 1 {
        return run(items);
    }
    let per = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<(usize, T)>> = Vec::with_capacity(threads);
    let mut items = items.into_iter();
    loop {
        let chunk: Vec<(usize, T)> = items.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    let mut chunks = chunks.into_iter();
    let first = chunks.next().unwrap_or_default();
    std::thread::scope(|scope| {
        let others: Vec<_> = chunks.map(|chunk| scope.spawn(|| run(chunk))).collect();
        let mut results = run(first);
        for other in others {
            match other.join() {
                Ok(more) => results.extend(more),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        results
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_order_and_the_first_failure_is_always_found() {
        let n = 4 * PARALLEL_FROM;
        for failing in [0, 1, n / 2 - 1, n / 2, n - 1] {
            // Items after `failing` fail too, and fail fast: the one that
            // counts is still the first in order.
            let results = in_parallel(
                (0..n).collect(),
                |r: &Result<usize, usize>| r.is_err(),
                |i| {
                    if i >= failing {
                        Err(i)
                    } else {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                        Ok(i)
                    }
                },
            );
            assert_eq!(results.len(), n);
            let first_err = results.iter().flatten().find_map(|r| r.err());
            assert_eq!(first_err, Some(failing));
            for (at, result) in results.iter().enumerate().take(failing) {
                assert_eq!(*result, Some(Ok(at)), "every item before the failure runs");
            }
        }
        let all = in_parallel((0..n).collect(), |_: &usize| false, |i| i * 2);
        assert_eq!(all, (0..n).map(|i| Some(i * 2)).collect::<Vec<_>>());
    }
}

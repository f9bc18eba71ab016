//! Per-page tables of zeros, allocated without `calloc`.
//!
//! `vec![0; n]` asks the allocator for zeroed memory. jemalloc zeroes an
//! extent it hands out for a large request (more than 32 KiB) by
//! returning its pages to the kernel (`madvise(MADV_DONTNEED)`) rather
//! than writing zeros: the call flushes the TLB of every core running the
//! process, and each page then faults twice, once to map the kernel's
//! zero page when it is first read (`total[i] += ...`) and once to copy
//! it when it is written. The subtree totals of a page with a few
//! thousand elements took 42% of a crawl's page faults that way on the
//! zh/en documentation mix (issue 37, target 2; docs/BENCHMARKS.md,
//! "Per-page tables written, not calloc'ed, and threads scheduled as a
//! batch"). Allocated plainly and
//! written, the table reuses memory the thread just freed, already
//! mapped and in cache.

/// `n` zeros (`T::default()`), the memory allocated plainly and written.
///
/// The fill is a loop the optimizer cannot fold back into a zeroed
/// allocation: LLVM turns an allocation followed by a memset of zeros
/// into `calloc`, which is what this avoids.
pub(crate) fn zeros<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.extend(std::iter::repeat_n(std::hint::black_box(T::default()), n));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_are_n_defaults() {
        for n in [0, 1, 7, 4096, 40_000] {
            let v = zeros::<u64>(n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 0));
            let b = zeros::<bool>(n);
            assert_eq!(b.len(), n);
            assert!(b.iter().all(|&x| !x));
            let f = zeros::<f64>(n);
            assert!(f.iter().all(|&x| x.to_bits() == 0));
        }
    }
}

//! The random order sequence of the `mix-0-10` benchmark pattern, shared by `pagealloc bench`
//! and the instruction-count driver (`examples/pairs.rs`) so both run the same mix.

/// Length of the sequence (a power of two: callers index it with `k & (MIX_LEN - 1)`).
pub const MIX_LEN: usize = 4096;

/// Orders uniform in 0..=10 from a fixed-seed xorshift: the same sequence for every allocator
/// and every run.
pub fn mix_orders() -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..MIX_LEN)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 11) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_fixed_and_covers_every_order() {
        let m = mix_orders();
        assert_eq!(m.len(), MIX_LEN);
        assert_eq!(m, mix_orders());
        assert!((0..=10).all(|o| m.contains(&o)));
        assert!(m.iter().all(|&o| o <= 10));
    }
}

//! Figures in the user's units.

/// Bytes in the user's units (GiB above 1 GiB, else MiB).
pub fn human_bytes(b: f64) -> String {
    let a = b.abs();
    if a >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    }
}

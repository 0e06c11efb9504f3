//! Wild copies: the fixed-size, overlapping-safe match and pattern copies the fast decoder
//! loops (lz4 and lzo) share.
//!
//! A decoder that checks one margin per sequence instead of one bound per byte may write a
//! few bytes past a copy's end (they are overwritten by what comes next, or lie past the
//! decoded length), which lets every copy be a handful of unaligned word moves. Each function
//! states, as its safety contract, the exact span it reads and writes; the callers prove the
//! span from their margin checks.

use std::ptr;

/// The 8-byte word that repeats the `offset` (1..=7) bytes before `at`, and the step (the
/// largest multiple of `offset` that is at most 8) at which it can be stored again: at every
/// multiple of `offset` the output repeats, so the same word is correct there. The word is the
/// `offset` bytes times [`PATTERN_MUL`], whose set bytes place copies of them at every multiple
/// of `offset` (they do not overlap, so the product carries nothing between them).
///
/// # Safety
/// `at - offset .. at - offset + 8` must lie inside the buffer `d` points to.
#[inline(always)]
unsafe fn pattern_word(d: *const u8, at: usize, offset: usize) -> (u64, usize) {
    // SAFETY: inside the buffer by the contract; the bytes at and past `at` are read but masked
    // off (they are initialized memory of the output slice).
    let word = unsafe { ptr::read_unaligned(d.add(at - offset).cast::<u64>()) };
    let k = offset & 7;
    let v = (u64::from_le(word) & PATTERN_MASK[k]).wrapping_mul(PATTERN_MUL[k]);
    (v.to_le(), PATTERN_STEP[k])
}

/// For an offset below 8: the low `offset` bytes of a word.
const PATTERN_MASK: [u64; 8] = [
    0,
    0xff,
    0xffff,
    0xff_ffff,
    0xffff_ffff,
    0xff_ffff_ffff,
    0xffff_ffff_ffff,
    0xff_ffff_ffff_ffff,
];
/// For an offset below 8: a 1 in every byte whose position is a multiple of `offset`.
const PATTERN_MUL: [u64; 8] = [
    0,
    0x0101_0101_0101_0101,
    0x0001_0001_0001_0001,
    0x0001_0000_0100_0001,
    0x0000_0001_0000_0001,
    0x0000_0100_0000_0001,
    0x0001_0000_0000_0001,
    0x0100_0000_0000_0001,
];
/// For an offset below 8: the largest multiple of it that is at most 8.
const PATTERN_STEP: [usize; 8] = [8, 8, 8, 6, 8, 5, 6, 7];

/// Copies a match of `len` bytes with an offset below 8 by storing its pattern word every
/// `step` bytes (as a 16-byte pair every 16 bytes when the period divides 8). Writes up to 15
/// bytes past `at + len`.
///
/// # Safety
/// `at - offset .. at + len + 15` must lie inside the buffer, with `1 <= offset <= 7`.
#[inline(always)]
pub(crate) unsafe fn copy_pattern(d: *mut u8, at: usize, offset: usize, len: usize) {
    // SAFETY: `at - offset + 8 <= at + 7`, inside by the contract.
    let (word, step) = unsafe { pattern_word(d, at, offset) };
    let mut done = 0;
    if step == 8 {
        let pair = [word, word];
        while done < len {
            // SAFETY: `at + done + 16 <= at + len + 15` since `done < len`.
            unsafe { ptr::write_unaligned(d.add(at + done).cast::<[u64; 2]>(), pair) };
            done += 16;
        }
    } else {
        while done < len {
            // SAFETY: `at + done + 8 <= at + len + 7` since `done < len`.
            unsafe { ptr::write_unaligned(d.add(at + done).cast::<u64>(), word) };
            done += step;
        }
    }
}

/// A match of at most 18 bytes with an offset of at least 8, as two 8-byte words and a 2-byte
/// one (18 bytes; those past the match are overwritten later). Each word is read after the
/// previous one is written, so a word overlapping the match's start sees its final bytes. The
/// last word is 2 bytes and not 8: for offsets of 16 and more it then lies inside the first
/// store, which the processor can forward to the load, where an 8-byte load would straddle it
/// and stall (measured: ~5% of the decoder's time on real pages).
///
/// # Safety
/// `at - offset .. at + 18` must lie inside the buffer, with `8 <= offset <= at`.
#[inline(always)]
pub(crate) unsafe fn copy_short_match(d: *mut u8, at: usize, offset: usize) {
    let from = at - offset;
    // SAFETY: reads `from .. from + 18 <= at + 10`, writes `at .. at + 18`, inside by the
    // contract.
    unsafe {
        let w = ptr::read_unaligned(d.add(from).cast::<u64>());
        ptr::write_unaligned(d.add(at).cast::<u64>(), w);
        let w = ptr::read_unaligned(d.add(from + 8).cast::<u64>());
        ptr::write_unaligned(d.add(at + 8).cast::<u64>(), w);
        let w = ptr::read_unaligned(d.add(from + 16).cast::<u16>());
        ptr::write_unaligned(d.add(at + 16).cast::<u16>(), w);
    }
}

/// A match of any length: 16-byte chunks for offsets of 16 and more, 8-byte chunks from 8, and
/// pattern stores below. Writes up to 15 bytes past `at + len`.
///
/// # Safety
/// `at - offset .. at + len + 15` must lie inside the buffer, with `1 <= offset <= at` and
/// `len >= 1`.
#[inline(always)]
pub(crate) unsafe fn copy_long_match(d: *mut u8, at: usize, offset: usize, len: usize) {
    let from = at - offset;
    // SAFETY: every read is in `from .. at + len + 15` and every write in `at .. at + len +
    // 15`; a chunk is never longer than the offset, so it reads only bytes already final.
    unsafe {
        if offset >= 16 {
            // Most long matches are 19..=32 bytes: two chunks without a loop test between.
            let chunk = ptr::read_unaligned(d.add(from).cast::<[u8; 16]>());
            ptr::write_unaligned(d.add(at).cast::<[u8; 16]>(), chunk);
            let mut done = 16;
            if len > 16 {
                let chunk = ptr::read_unaligned(d.add(from + 16).cast::<[u8; 16]>());
                ptr::write_unaligned(d.add(at + 16).cast::<[u8; 16]>(), chunk);
                done = 32;
            }
            while done < len {
                let chunk = ptr::read_unaligned(d.add(from + done).cast::<[u8; 16]>());
                ptr::write_unaligned(d.add(at + done).cast::<[u8; 16]>(), chunk);
                done += 16;
            }
        } else if offset >= 8 {
            let mut done = 0;
            while done < len {
                let chunk = ptr::read_unaligned(d.add(from + done).cast::<u64>());
                ptr::write_unaligned(d.add(at + done).cast::<u64>(), chunk);
                done += 8;
            }
        } else {
            copy_pattern(d, at, offset, len);
        }
    }
}

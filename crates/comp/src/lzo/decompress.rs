//! The LZO1X decoder for both bitstreams (`lzo1x_decompress_safe`'s contract, written from the
//! format description in the module header).
//!
//! Every read is checked against the input and every write against the output, and a match may
//! not reach before the start of the output: malformed input gives [`CompError::Corrupt`] with
//! the input offset, a too-small destination [`CompError::OutputTooSmall`]. A stream is complete
//! only at its end marker, which must be the last three bytes of the input.
//!
//! This is the checked decoder: it finishes what the raw fast loop ([`super::decode_raw`])
//! leaves near the end of the stream or at anything unusual, and is the whole decoder in
//! [`decompress_checked`]. Its own speed comes from copying in fixed-size blocks where both buffers have room past the exact
//! length (literal runs in 16-byte blocks, matches at distance 8 or more in 8-byte blocks) and
//! from filling short-distance matches (zero runs under plain `lzo` are distance-1..8 matches
//! thousands of bytes long) by doubling the copied period instead of byte by byte.

use super::VERSION_MARKER;
use super::decode_raw::decode_fast_raw;
use crate::CompError;

const NAME: &str = "lzo";

fn truncated(at: usize) -> CompError {
    CompError::corrupt(NAME, at, "input ends inside an instruction")
}

/// Input cursor: every read is checked.
struct In<'a> {
    buf: &'a [u8],
    ip: usize,
}

impl In<'_> {
    #[inline(always)]
    fn byte(&mut self) -> Result<usize, CompError> {
        let b = *self.buf.get(self.ip).ok_or_else(|| truncated(self.ip))?;
        self.ip += 1;
        Ok(b as usize)
    }

    #[inline(always)]
    fn le16(&mut self) -> Result<usize, CompError> {
        let w = self.peek_le16()?;
        self.ip += 2;
        Ok(w)
    }

    #[inline(always)]
    fn peek_le16(&self) -> Result<usize, CompError> {
        match self.buf.get(self.ip..self.ip + 2) {
            Some(b) => Ok(u16::from_le_bytes([b[0], b[1]]) as usize),
            None => Err(truncated(self.ip)),
        }
    }

    /// The zero-byte length extension: 255 per zero byte plus the first non-zero byte.
    #[inline(always)]
    fn extension(&mut self) -> Result<usize, CompError> {
        let mut len = 0usize;
        loop {
            match self.byte()? {
                0 => len += 255,
                b => return Ok(len + b),
            }
        }
    }
}

/// Decodes an `lzo` or `lzo-rle` stream from `src` into `dst` and returns the decoded length.
/// Bytes of `dst` past that length may have been written too (the fast loop's wild copies).
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
    decompress_with(src, dst, true)
}

/// [`decompress`] without the raw fast loop: every read and write bounds-checked. The
/// reference the fast loop is tested against.
pub fn decompress_checked(src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
    decompress_with(src, dst, false)
}

#[inline(always)]
fn decompress_with(src: &[u8], dst: &mut [u8], fast: bool) -> Result<usize, CompError> {
    let mut input = In { buf: src, ip: 0 };
    let mut op = 0usize;
    // A versioned stream: 17, version. Version 0 streams shorter than 5 bytes may start with 17
    // (the empty stream is `11 00 00`), so the header is only looked for in longer ones.
    let mut rle = false;
    if src.len() >= 5 && src[0] == VERSION_MARKER {
        rle = src[1] != 0;
        input.ip = 2;
    }

    // The first byte may be a literal count of its own: b > 17 means b - 17 literals.
    let mut state = 0usize;
    let first = *src.get(input.ip).ok_or_else(|| truncated(input.ip))? as usize;
    if first > 17 {
        input.ip += 1;
        let t = first - 17;
        copy_literals(&mut input, dst, &mut op, t)?;
        state = t.min(4);
    }
    if fast {
        let raw = if rle { decode_fast_raw::<true> } else { decode_fast_raw::<false> };
        (input.ip, op, state) = raw(src, dst, input.ip, op, state);
    }

    loop {
        let at = input.ip;
        let inst = input.byte()?;
        let (len, dist, ss);
        if inst >= 64 {
            // M2: 01LDDDSS / 1LLDDDSS + H.
            let h = input.byte()?;
            len = (inst >> 5) + 1;
            dist = (h << 3) + ((inst >> 2) & 7) + 1;
            ss = inst & 3;
        } else if inst >= 32 {
            // M3: 001LLLLL (+ extension) + LE16.
            let l = match inst & 31 {
                0 => 31 + input.extension()?,
                l => l,
            };
            len = l + 2;
            let w = input.le16()?;
            dist = (w >> 2) + 1;
            ss = w & 3;
        } else if inst >= 16 {
            // M4: 0001HLLL (+ extension) + LE16; or, in a versioned stream, a zero run.
            if rle && (inst & 0xf8) == 0x18 {
                let w = input.peek_le16()?;
                if (w & 0xfffc) == 0xfffc {
                    input.ip += 2;
                    let x = input.byte()?;
                    let run = ((x << 3) | (inst & 7)) + 4;
                    fill_zeros(dst, &mut op, run)?;
                    let ss = w & 3;
                    copy_literals(&mut input, dst, &mut op, ss)?;
                    state = ss;
                    continue;
                }
            }
            let l = match inst & 7 {
                0 => 7 + input.extension()?,
                l => l,
            };
            len = l + 2;
            let w = input.le16()?;
            let d = ((inst & 8) << 11) + (w >> 2);
            if d == 0 {
                // End of stream: `11 00 00`, and nothing after it.
                if len != 3 {
                    return Err(CompError::corrupt(NAME, at, "malformed end marker"));
                }
                if input.ip != src.len() {
                    return Err(CompError::corrupt(NAME, input.ip, "data after the end marker"));
                }
                return Ok(op);
            }
            dist = d + 0x4000;
            ss = w & 3;
        } else if state == 0 {
            // 0000LLLL after a match without literals: a literal run.
            let l = match inst {
                0 => 15 + input.extension()?,
                l => l,
            };
            copy_literals(&mut input, dst, &mut op, l + 3)?;
            state = 4;
            continue;
        } else {
            // 0000DDSS + H: a 2-byte match after 1-3 literals, a 3-byte one after 4 or more.
            let h = input.byte()?;
            if state < 4 {
                len = 2;
                dist = (h << 2) + (inst >> 2) + 1;
            } else {
                len = 3;
                dist = (h << 2) + (inst >> 2) + 2049;
            }
            ss = inst & 3;
        }
        copy_match(dst, &mut op, dist, len, at)?;
        copy_literals(&mut input, dst, &mut op, ss)?;
        state = ss;
    }
}

fn output_overrun(dst: &[u8]) -> CompError {
    CompError::OutputTooSmall { capacity: dst.len() }
}

/// Copies `t` literals from the input to `dst[*op..]`.
#[inline(always)]
fn copy_literals(
    input: &mut In<'_>,
    dst: &mut [u8],
    op: &mut usize,
    t: usize,
) -> Result<(), CompError> {
    const BLOCK: usize = 16;
    let (ip, o) = (input.ip, *op);
    let src = input.buf;
    if t <= BLOCK && src.len() - ip >= BLOCK && dst.len() - o >= BLOCK {
        // Short run with room behind it in both buffers: one fixed-size block.
        let block: &[u8; BLOCK] = src[ip..ip + BLOCK].try_into().unwrap();
        dst[o..o + BLOCK].copy_from_slice(block);
    } else {
        if src.len() - ip < t {
            return Err(truncated(ip));
        }
        if dst.len() - o < t {
            return Err(output_overrun(dst));
        }
        dst[o..o + t].copy_from_slice(&src[ip..ip + t]);
    }
    input.ip = ip + t;
    *op = o + t;
    Ok(())
}

/// Appends `run` zero bytes (the lzo-rle zero-run instruction).
#[inline(always)]
fn fill_zeros(dst: &mut [u8], op: &mut usize, run: usize) -> Result<(), CompError> {
    if dst.len() - *op < run {
        return Err(output_overrun(dst));
    }
    dst[*op..*op + run].fill(0);
    *op += run;
    Ok(())
}

/// Appends `len` bytes copied from `dist` bytes back; the source may overlap the destination,
/// in which case the last `dist` bytes repeat.
#[inline(always)]
fn copy_match(
    dst: &mut [u8],
    op: &mut usize,
    dist: usize,
    len: usize,
    at: usize,
) -> Result<(), CompError> {
    let o = *op;
    if dist > o {
        return Err(CompError::corrupt(NAME, at, "match distance before the start of the output"));
    }
    let room = dst.len() - o;
    if room < len {
        return Err(output_overrun(dst));
    }
    let from = o - dist;
    if dist >= 8 && room >= len + 8 {
        // Each 8-byte block reads only bytes already final (dist >= 8), so blocks may run past
        // `len` into the room behind it; later writes overwrite the excess.
        let mut k = 0;
        while k < len {
            let block: [u8; 8] = dst[from + k..from + k + 8].try_into().unwrap();
            dst[o + k..o + k + 8].copy_from_slice(&block);
            k += 8;
        }
    } else if dist >= len {
        dst.copy_within(from..from + len, o);
    } else {
        // Overlapping: the output repeats with period `dist`, so after copying `p` bytes the
        // period may be read from `p` bytes back; copy in doubling pieces.
        let mut done = 0;
        let mut period = dist;
        while done < len {
            let n = period.min(len - done);
            dst.copy_within(o + done - period..o + done - period + n, o + done);
            done += n;
            period += n;
        }
    }
    *op = o + len;
    Ok(())
}

//! `lz4hc`: the kernel's LZ4 HC compressor (`lib/lz4/lz4hc_compress.c`, LZ4 v1.7.3), our own
//! implementation; decoding is the ordinary LZ4 block format, so it uses our LZ4 decoder.
//!
//! zram calls `LZ4_compress_HC(src, dst, len, cap, level, wrkmem)` (default level 9), and with a
//! dictionary `LZ4_resetStreamHC` + `LZ4_loadDictHC` + `LZ4_compress_HC_continue` for every page
//! (`backend_lz4hc.c: lz4hc_compress`). The v1.7.3 compressor is a hash-chain search: a 2^15
//! entry hash of 4-byte words, a 2^16 entry chain of u16 distances (indexed by the low 16 bits of
//! the position, 64 KiB window), `1 << (level - 1)` candidates per search for every level 1..=16
//! (levels above 16 are 16, below 1 the default 9), and a three-match look-ahead
//! (`LZ4HC_compress_generic`: `_Search2`, `_Search3`, `OPTIMAL_ML`) that decides where each
//! sequence ends. liblz4 >= 1.7.5 replaced levels 10..=16 with other parsers and >= 1.8.0 changed
//! the level table, so no current liblz4 gives these bytes; liblz4 1.7.5 (lz4-sys `1.0.1+1.7.5`)
//! still has the v1.7.3 hash-chain compressor, which is the reference our fixture was written
//! with (tests/lz4hc_reference.rs; docs/REFERENCES.md [lz4hc-kernel]).
//!
//! Positions are the C code's indices: the window starts 64 KiB in (`LZ4HC_init`: `base = start -
//! 64 KB`), a dictionary's last 64 KiB occupy `[64 KiB, 64 KiB + dict)` and the page follows
//! (`LZ4HC_setExternalDict`), so a match into the dictionary continues into the page exactly as
//! the C code's `vLimit` continuation does.
//!
//! This is what the registry builds. `Lz4HcFast` (feature `liblz4`, src/lz4hc_fast.rs) is liblz4
//! 1.10's HC, faster at levels 1..=9 but not the kernel's bytes.
//!
//! One difference in failure, none in bytes: the C code, given less than `LZ4_compressBound`
//! room, gives up as soon as a conservative estimate of the next sequence does not fit; this
//! writes until a byte really does not fit. zram and zswap always give two pages, so neither
//! path fails there.

use crate::lz4::{MAX_INPUT_SIZE, decompress_block};
use crate::{CompError, Compressor, Params};
use std::sync::Arc;

const NAME: &str = "lz4hc";
/// `LZ4HC_DEFAULT_CLEVEL`.
pub(crate) const DEFAULT_LEVEL: i32 = 9;
/// `LZ4HC_MIN_CLEVEL` in the kernel's validation.
pub(crate) const MIN_LEVEL: i32 = 1;
/// `LZ4HC_MAX_CLEVEL` (kernel).
pub(crate) const MAX_LEVEL: i32 = 16;

/// `LZ4HC_HASH_LOG`.
const HASH_LOG: u32 = 15;
/// `LZ4HC_MAXD`: the chain is indexed by the position's low 16 bits (`DELTANEXTU16`).
const MAXD: usize = 1 << 16;
/// `MAX_DISTANCE`.
const MAX_DISTANCE: usize = 65535;
/// The first index of a fresh window (`LZ4HC_init`: `64 * KB`).
const WINDOW_START: usize = 64 * 1024;
const MINMATCH: usize = 4;
const MFLIMIT: usize = 12;
const LASTLITERALS: usize = 5;
const ML_BITS: u32 = 4;
const ML_MASK: usize = (1 << ML_BITS) - 1;
const RUN_MASK: usize = (1 << (8 - ML_BITS)) - 1;
/// `OPTIMAL_ML`.
const OPTIMAL_ML: usize = (ML_MASK - 1) + MINMATCH;

/// `LZ4HC_CCtx_internal` less its pointers: tables and the window's limits, as indices.
struct HcState {
    hash_table: Box<[u32]>,
    chain_table: Box<[u16]>,
    next_to_update: usize,
    /// Indices below this are out of the window.
    low_limit: usize,
    /// Indices from here on are the page (`prefix`); below, the dictionary.
    dict_limit: usize,
}

/// The bytes behind the indices: the dictionary's kept tail at `[WINDOW_START, dict_limit)` and
/// the page from `dict_limit` on. `DICT` false (no dictionary) compiles the dictionary branches
/// away: every index is then in the page.
struct Window<'a, const DICT: bool> {
    dict: &'a [u8],
    src: &'a [u8],
    dict_limit: usize,
}

impl<const DICT: bool> Window<'_, DICT> {
    #[inline(always)]
    fn byte(&self, i: usize) -> u8 {
        if i >= self.dict_limit {
            self.src[i - self.dict_limit]
        } else {
            self.dict[i - WINDOW_START]
        }
    }

    #[inline(always)]
    fn read32(&self, i: usize) -> u32 {
        if !DICT || i >= self.dict_limit {
            let k = i - self.dict_limit;
            u32::from_le_bytes(self.src[k..k + 4].try_into().unwrap_or([0; 4]))
        } else if i + 4 <= self.dict_limit {
            let k = i - WINDOW_START;
            u32::from_le_bytes(self.dict[k..k + 4].try_into().unwrap_or([0; 4]))
        } else {
            // Straddles the dictionary's end; the C code never hashes such a position.
            u32::from_le_bytes([self.byte(i), self.byte(i + 1), self.byte(i + 2), self.byte(i + 3)])
        }
    }

    /// `LZ4_count` within the page: how many bytes from page offsets `a` and `b` are equal,
    /// `a` stopping at `limit`.
    #[inline(always)]
    fn count_src(&self, a: usize, b: usize, limit: usize) -> usize {
        count(self.src, a, b, limit)
    }
}

/// `LZ4_count` on one buffer: equal bytes at `a` and `b`, `a` stopping at `limit` (`b < a`).
#[inline(always)]
fn count(buf: &[u8], a: usize, b: usize, limit: usize) -> usize {
    let start = a;
    let (mut a, mut b) = (a, b);
    while a + 8 <= limit {
        let x = u64::from_le_bytes(buf[a..a + 8].try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(buf[b..b + 8].try_into().unwrap_or([0; 8]));
        let diff = x ^ y;
        if diff != 0 {
            return a - start + (diff.trailing_zeros() / 8) as usize;
        }
        a += 8;
        b += 8;
    }
    while a < limit && buf[a] == buf[b] {
        a += 1;
        b += 1;
    }
    a - start
}

/// `LZ4_count` from the dictionary into the page: page offset `a` against dictionary offset
/// `b`, `a` stopping at page offset `limit`.
#[inline(always)]
fn count_dict(src: &[u8], dict: &[u8], a: usize, b: usize, limit: usize) -> usize {
    let n = (limit - a).min(dict.len() - b);
    src[a..a + n].iter().zip(&dict[b..b + n]).take_while(|(x, y)| x == y).count()
}

#[inline(always)]
fn hash(v: u32) -> usize {
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize
}

impl HcState {
    fn new() -> Self {
        HcState {
            hash_table: vec![0u32; 1 << HASH_LOG].into_boxed_slice(),
            chain_table: vec![0xFFFFu16; MAXD].into_boxed_slice(),
            next_to_update: WINDOW_START,
            low_limit: WINDOW_START,
            dict_limit: WINDOW_START,
        }
    }

    /// `LZ4HC_init`.
    fn init(&mut self) {
        self.hash_table.fill(0);
        self.chain_table.fill(0xFFFF);
        self.next_to_update = WINDOW_START;
        self.dict_limit = WINDOW_START;
        self.low_limit = WINDOW_START;
    }

    /// `LZ4HC_Insert`: chains every position from `next_to_update` up to `target` (excluded).
    #[inline(always)]
    fn insert<const DICT: bool>(&mut self, w: &Window<'_, DICT>, target: usize) {
        let mut idx = self.next_to_update;
        while idx < target {
            let h = hash(w.read32(idx));
            let delta = (idx - self.hash_table[h] as usize).min(MAX_DISTANCE);
            self.chain_table[idx & 0xFFFF] = delta as u16;
            self.hash_table[h] = idx as u32;
            idx += 1;
        }
        self.next_to_update = target;
    }

    /// The window's lower end for a search at `ip`.
    #[inline(always)]
    fn low_limit_at(&self, ip: usize) -> usize {
        if self.low_limit + 64 * 1024 > ip { self.low_limit } else { ip - (64 * 1024 - 1) }
    }

    /// `LZ4HC_InsertAndFindBestMatch`: the longest match at `ip` (0 for none), ending by
    /// `i_limit`; returns (length, match index).
    fn find_best_match<const DICT: bool>(
        &mut self,
        w: &Window<'_, DICT>,
        ip: usize,
        i_limit: usize,
        attempts: u32,
    ) -> (usize, usize) {
        let dict_limit = self.dict_limit;
        let low_limit = self.low_limit_at(ip);
        self.insert(w, ip);
        let mut match_index = self.hash_table[hash(w.read32(ip))] as usize;
        let mut nb = attempts;
        let mut ml = 0usize;
        let mut pos = 0usize;
        let ip_word = w.read32(ip);
        let (ipk, limk) = (ip - dict_limit, i_limit - dict_limit);
        while match_index >= low_limit && nb > 0 {
            nb -= 1;
            if !DICT || match_index >= dict_limit {
                let mk = match_index - dict_limit;
                if w.src[mk + ml] == w.src[ipk + ml] && w.read32(match_index) == ip_word {
                    let mlt = w.count_src(ipk + MINMATCH, mk + MINMATCH, limk) + MINMATCH;
                    if mlt > ml {
                        ml = mlt;
                        pos = match_index;
                    }
                }
            } else if w.read32(match_index) == ip_word {
                let mk = match_index - WINDOW_START;
                // vLimit: where the dictionary ends, seen from `ip`.
                let v_limit = (ipk + (dict_limit - match_index)).min(limk);
                let mut mlt =
                    count_dict(w.src, w.dict, ipk + MINMATCH, mk + MINMATCH, v_limit) + MINMATCH;
                if ipk + mlt == v_limit && v_limit < limk {
                    mlt += w.count_src(ipk + mlt, 0, limk);
                }
                if mlt > ml {
                    ml = mlt;
                    pos = match_index;
                }
            }
            match_index -= self.chain_table[match_index & 0xFFFF] as usize;
        }
        (ml, pos)
    }

    /// `LZ4HC_InsertAndGetWiderMatch`: a match around `ip` longer than `longest`, which may
    /// start as far back as `i_low`; returns (length, match index, start index).
    #[allow(clippy::too_many_arguments)]
    fn get_wider_match<const DICT: bool>(
        &mut self,
        w: &Window<'_, DICT>,
        ip: usize,
        i_low: usize,
        i_high: usize,
        mut longest: usize,
        attempts: u32,
        mut found: (usize, usize),
    ) -> (usize, usize, usize) {
        let dict_limit = self.dict_limit;
        let low_limit = self.low_limit_at(ip);
        let delta = ip - i_low;
        self.insert(w, ip);
        let ip_word = w.read32(ip);
        let mut match_index = self.hash_table[hash(ip_word)] as usize;
        let mut nb = attempts;
        let (ipk, lowk, highk) = (ip - dict_limit, i_low - dict_limit, i_high - dict_limit);
        while match_index >= low_limit && nb > 0 {
            nb -= 1;
            if !DICT || match_index >= dict_limit {
                let mk = match_index - dict_limit;
                if w.src[lowk + longest] == w.src[mk + longest - delta]
                    && w.read32(match_index) == ip_word
                {
                    let mlt = MINMATCH + w.count_src(ipk + MINMATCH, mk + MINMATCH, highk);
                    // Extend backwards, within the page (`lowPrefixPtr`) and not before `i_low`.
                    let mut back = 0usize;
                    while ipk - back > lowk
                        && mk - back > 0
                        && w.src[ipk - back - 1] == w.src[mk - back - 1]
                    {
                        back += 1;
                    }
                    let mlt = mlt + back;
                    if mlt > longest {
                        longest = mlt;
                        found = (match_index - back, ip - back);
                    }
                }
            } else if w.read32(match_index) == ip_word {
                let mk = match_index - WINDOW_START;
                let v_limit = (ipk + (dict_limit - match_index)).min(highk);
                let mut mlt =
                    count_dict(w.src, w.dict, ipk + MINMATCH, mk + MINMATCH, v_limit) + MINMATCH;
                if ipk + mlt == v_limit && v_limit < highk {
                    mlt += w.count_src(ipk + mlt, 0, highk);
                }
                // Backwards within the dictionary, down to the window's lower end.
                let mut back = 0usize;
                while ipk - back > lowk
                    && match_index - back > low_limit
                    && w.src[ipk - back - 1] == w.dict[mk - back - 1]
                {
                    back += 1;
                }
                let mlt = mlt + back;
                if mlt > longest {
                    longest = mlt;
                    found = (match_index - back, ip - back);
                }
            }
            match_index -= self.chain_table[match_index & 0xFFFF] as usize;
        }
        (longest, found.0, found.1)
    }
}

/// Output with the sequence encoding of `LZ4HC_encodeSequence` and the last literals.
struct Out<'a> {
    dst: &'a mut [u8],
    op: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn push(&mut self, b: u8) -> Result<(), CompError> {
        let slot = self.dst.get_mut(self.op).ok_or(CompError::OutputTooSmall { capacity: 0 })?;
        *slot = b;
        self.op += 1;
        Ok(())
    }

    #[inline(always)]
    fn extend(&mut self, bytes: &[u8]) -> Result<(), CompError> {
        let end = self.op + bytes.len();
        let slot =
            self.dst.get_mut(self.op..end).ok_or(CompError::OutputTooSmall { capacity: 0 })?;
        slot.copy_from_slice(bytes);
        self.op = end;
        Ok(())
    }

    /// The length continuation bytes: 255 while more than 254 remain, then the rest.
    #[inline(always)]
    fn length(&mut self, mut len: usize) -> Result<(), CompError> {
        while len > 254 {
            self.push(255)?;
            len -= 255;
        }
        self.push(len as u8)
    }

    /// `LZ4HC_encodeSequence`: the literals `src[anchor..ip]` and a match of `ml` at `offset`.
    #[inline(always)]
    fn sequence(&mut self, literals: &[u8], ml: usize, offset: usize) -> Result<(), CompError> {
        let token_at = self.op;
        self.push(0)?;
        let lit = literals.len();
        let mut token = if lit >= RUN_MASK {
            self.length(lit - RUN_MASK)?;
            (RUN_MASK << ML_BITS) as u8
        } else {
            (lit << ML_BITS) as u8
        };
        self.extend(literals)?;
        self.extend(&(offset as u16).to_le_bytes())?;
        let len = ml - MINMATCH;
        if len >= ML_MASK {
            token += ML_MASK as u8;
            self.length(len - ML_MASK)?;
        } else {
            token += len as u8;
        }
        self.dst[token_at] = token;
        Ok(())
    }
}

/// `LZ4HC_compress_generic` over a window whose page starts at `state.dict_limit`.
fn compress_generic<const DICT: bool>(
    state: &mut HcState,
    w: &Window<'_, DICT>,
    dst: &mut [u8],
    level: i32,
) -> Result<usize, CompError> {
    let level = if level > MAX_LEVEL {
        MAX_LEVEL
    } else if level < 1 {
        DEFAULT_LEVEL
    } else {
        level
    };
    let attempts = 1u32 << (level - 1);
    let base = state.dict_limit;
    let iend = base + w.src.len();
    let mflimit = iend.saturating_sub(MFLIMIT);
    let matchlimit = iend.saturating_sub(LASTLITERALS);
    let mut out = Out { dst, op: 0 };
    let mut anchor = base;
    let mut ip = base + 1;
    let lits = |from: usize, to: usize| &w.src[from - base..to - base];

    // The C code's labels become a small state machine: `Search2` and `Search3` with the
    // variables they carry (ip, ref, ml; start0, ref0, ml0; start2, ref2, ml2).
    'main: while ip < mflimit {
        let (mut ml, mut rf) = state.find_best_match(w, ip, matchlimit, attempts);
        if ml == 0 {
            ip += 1;
            continue;
        }
        let (mut start0, mut ref0, mut ml0) = (ip, rf, ml);
        let (mut start2, mut ref2, mut ml2);
        'search2: loop {
            if ip + ml < mflimit {
                let (l, r, s) =
                    state.get_wider_match(w, ip + ml - 2, ip, matchlimit, ml, attempts, (0, 0));
                (ml2, ref2, start2) = (l, r, s);
            } else {
                (ml2, ref2, start2) = (ml, 0, 0);
            }
            if ml2 == ml {
                out.sequence(lits(anchor, ip), ml, ip - rf)?;
                ip += ml;
                anchor = ip;
                continue 'main;
            }
            if start0 < ip && start2 < ip + ml0 {
                ip = start0;
                rf = ref0;
                ml = ml0;
            }
            if start2 - ip < 3 {
                ml = ml2;
                ip = start2;
                rf = ref2;
                continue 'search2;
            }
            // _Search3
            loop {
                if start2 - ip < OPTIMAL_ML {
                    let mut new_ml = ml.min(OPTIMAL_ML);
                    if ip + new_ml > start2 + ml2 - MINMATCH {
                        new_ml = (start2 - ip) + ml2 - MINMATCH;
                    }
                    let correction = new_ml as isize - (start2 - ip) as isize;
                    if correction > 0 {
                        let c = correction as usize;
                        start2 += c;
                        ref2 += c;
                        ml2 -= c;
                    }
                }
                let (ml3, ref3, start3) = if start2 + ml2 < mflimit {
                    state.get_wider_match(
                        w,
                        start2 + ml2 - 3,
                        start2,
                        matchlimit,
                        ml2,
                        attempts,
                        (0, 0),
                    )
                } else {
                    (ml2, 0, 0)
                };
                if ml3 == ml2 {
                    // Two sequences to write.
                    if start2 < ip + ml {
                        ml = start2 - ip;
                    }
                    out.sequence(lits(anchor, ip), ml, ip - rf)?;
                    ip += ml;
                    anchor = ip;
                    ip = start2;
                    out.sequence(lits(anchor, ip), ml2, ip - ref2)?;
                    ip += ml2;
                    anchor = ip;
                    continue 'main;
                }
                if start3 < ip + ml + 3 {
                    // No room for match 2.
                    if start3 >= ip + ml {
                        // Write match 1; match 3 becomes match 1.
                        if start2 < ip + ml {
                            let c = ip + ml - start2;
                            start2 += c;
                            ref2 += c;
                            // The C code's `int` may go negative here; only its sign is used.
                            if ml2 < MINMATCH + c {
                                start2 = start3;
                                ref2 = ref3;
                                ml2 = ml3;
                            } else {
                                ml2 -= c;
                            }
                        }
                        out.sequence(lits(anchor, ip), ml, ip - rf)?;
                        ip += ml;
                        anchor = ip;
                        ip = start3;
                        rf = ref3;
                        ml = ml3;
                        start0 = start2;
                        ref0 = ref2;
                        ml0 = ml2;
                        continue 'search2;
                    }
                    start2 = start3;
                    ref2 = ref3;
                    ml2 = ml3;
                    continue;
                }
                // Three ascending matches: write at least the first.
                if start2 < ip + ml {
                    if start2 - ip < ML_MASK {
                        ml = ml.min(OPTIMAL_ML);
                        if ip + ml > start2 + ml2 - MINMATCH {
                            ml = (start2 - ip) + ml2 - MINMATCH;
                        }
                        let correction = ml as isize - (start2 - ip) as isize;
                        if correction > 0 {
                            let c = correction as usize;
                            start2 += c;
                            ref2 += c;
                            ml2 -= c;
                        }
                    } else {
                        ml = start2 - ip;
                    }
                }
                out.sequence(lits(anchor, ip), ml, ip - rf)?;
                ip += ml;
                anchor = ip;
                ip = start2;
                rf = ref2;
                ml = ml2;
                start2 = start3;
                ref2 = ref3;
                ml2 = ml3;
            }
        }
    }

    // Last literals.
    let last = iend - anchor;
    if last >= RUN_MASK {
        out.push((RUN_MASK << ML_BITS) as u8)?;
        out.length(last - RUN_MASK)?;
    } else {
        out.push((last << ML_BITS) as u8)?;
    }
    out.extend(lits(anchor, iend))?;
    Ok(out.op)
}

/// An lz4hc stream: the level, the match-finder state and the dictionary if any.
pub struct Lz4Hc {
    level: i32,
    state: HcState,
    dict: Option<Arc<[u8]>>,
}

impl std::fmt::Debug for Lz4Hc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lz4Hc")
            .field("level", &self.level)
            .field("dict_len", &self.dict.as_ref().map(|d| d.len()))
            .finish_non_exhaustive()
    }
}

impl Lz4Hc {
    /// Builds a stream from zram parameters (`level` 1..=16, `dict`).
    pub fn new(params: &Params) -> Result<Self, CompError> {
        let level = params.level.unwrap_or(DEFAULT_LEVEL);
        if !(MIN_LEVEL..=MAX_LEVEL).contains(&level) {
            return Err(CompError::InvalidParam {
                algo: NAME,
                msg: format!("level {level} out of range {MIN_LEVEL}..={MAX_LEVEL}"),
            });
        }
        // backend_lz4hc.c uses the streaming path only when `dict_sz` is not 0.
        let dict = params.dict.clone().filter(|d| !d.is_empty());
        Ok(Lz4Hc { level, state: HcState::new(), dict })
    }
}

impl Compressor for Lz4Hc {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        if src.len() > MAX_INPUT_SIZE {
            return Err(CompError::InputTooLarge {
                algo: NAME,
                len: src.len(),
                max: MAX_INPUT_SIZE,
            });
        }
        let capacity = dst.len();
        let state = &mut self.state;
        let result = match &self.dict {
            // LZ4_compress_HC -> LZ4_compress_HC_extStateHC: a fresh window at the page.
            None => {
                state.init();
                let w = Window::<false> { dict: &[], src, dict_limit: WINDOW_START };
                compress_generic(state, &w, dst, self.level)
            }
            Some(dict) => {
                // LZ4_loadDictHC keeps the last 64 KiB and returns how much it kept;
                // backend_lz4hc.c fails the page (-EINVAL) unless that is the whole dictionary.
                if dict.len() > 64 * 1024 {
                    return Err(CompError::Backend {
                        algo: NAME,
                        msg: format!(
                            "LZ4_loadDictHC keeps 65536 of {} dictionary bytes: zram fails the write",
                            dict.len()
                        ),
                    });
                }
                // LZ4_resetStreamHC + LZ4_loadDictHC: a fresh window at the dictionary, every
                // dictionary position up to its last 3 bytes chained.
                state.init();
                let dict_end = WINDOW_START + dict.len();
                let w = Window::<true> { dict, src: &[], dict_limit: dict_end };
                if dict.len() >= 4 {
                    state.insert(&w, dict_end - 3);
                }
                // LZ4_compress_HC_continue -> LZ4HC_setExternalDict: the page follows the
                // dictionary (its own `LZ4HC_Insert(end - 3)` finds nothing left to chain);
                // chaining resumes at the page.
                state.low_limit = WINDOW_START;
                state.dict_limit = dict_end;
                state.next_to_update = dict_end;
                let w = Window::<true> { dict, src, dict_limit: dict_end };
                compress_generic(state, &w, dst, self.level)
            }
        };
        result.map_err(|e| match e {
            CompError::OutputTooSmall { .. } => CompError::OutputTooSmall { capacity },
            other => other,
        })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompError> {
        let prefix = self.dict.as_deref().unwrap_or(&[]);
        decompress_block(src, dst, prefix).map_err(|e| match e {
            CompError::Corrupt { at, what, .. } => CompError::Corrupt { algo: NAME, at, what },
            other => other,
        })
    }
}

//! [`InlineText`]: a few bytes of text inside an error, without a heap.

use core::fmt;

/// A few bytes of text kept inline (no heap), cut at a character boundary with `…` if too long.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct InlineText<const N: usize> {
    bytes: [u8; N],
    len: u8,
}

impl<const N: usize> InlineText<N> {
    pub(crate) const EMPTY: Self = InlineText {
        bytes: [0; N],
        len: 0,
    };

    pub(crate) fn new(text: &str) -> Self {
        let mut out = Self::EMPTY;
        let ellipsis = "…";
        let cut = if text.len() <= N {
            text.len()
        } else {
            let mut cut = N - ellipsis.len();
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        };
        out.bytes[..cut].copy_from_slice(&text.as_bytes()[..cut]);
        let mut len = cut;
        if cut < text.len() {
            out.bytes[cut..cut + ellipsis.len()].copy_from_slice(ellipsis.as_bytes());
            len += ellipsis.len();
        }
        out.len = len as u8;
        out
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ever filled from whole `&str` characters, so this cannot fail.
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl<const N: usize> fmt::Debug for InlineText<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

//! The operation a bio performs (`enum req_op`, the low bits of `bi_opf`).
//!
//! C header: [`include/linux/blk_types.h`](srctree/include/linux/blk_types.h)

/// What a bio asks the device to do.
///
/// # Examples
///
/// ```
/// use bio::Op;
/// assert!(Op::Read.has_data() && Op::Write.has_data());
/// assert!(!Op::Discard.has_data() && !Op::Flush.has_data());
/// assert!(Op::WriteZeroes.is_write() && !Op::Read.is_write());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read sectors into the bio's pages (`REQ_OP_READ`).
    Read,
    /// Write the bio's pages to sectors (`REQ_OP_WRITE`).
    Write,
    /// Flush the volatile write cache; carries no data (`REQ_OP_FLUSH`).
    Flush,
    /// Deallocate a sector range; carries no data, only a size (`REQ_OP_DISCARD`).
    Discard,
    /// Zero a sector range; carries no data, only a size (`REQ_OP_WRITE_ZEROES`).
    WriteZeroes,
}

impl Op {
    /// Whether the bio carries a vec table (reads and writes only).
    pub const fn has_data(self) -> bool {
        matches!(self, Self::Read | Self::Write)
    }

    /// Whether the operation changes the medium (`op_is_write`: the odd opcodes).
    pub const fn is_write(self) -> bool {
        matches!(self, Self::Write | Self::Discard | Self::WriteZeroes)
    }
}

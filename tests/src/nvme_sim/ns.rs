//! RAM namespaces of the simulated controller, and the Identify data the controller returns
//! for them (built byte by byte from the NVMe specification's layout).

/// One LBA format: metadata bytes and LBA data size exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbaFormat {
    /// Metadata bytes per block.
    pub ms: u16,
    /// log2 of the block size.
    pub lbads: u8,
}

/// Configuration of one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NsConfig {
    /// Namespace id (1-based).
    pub nsid: u32,
    /// Size in logical blocks (NSZE).
    pub blocks: u64,
    /// Supported LBA formats (at most 64).
    pub formats: Vec<LbaFormat>,
    /// Index of the formatted one (FLBAS).
    pub formatted: u8,
}

impl NsConfig {
    /// A namespace of `blocks` blocks of `1 << lbads` bytes, with one format.
    pub fn simple(nsid: u32, blocks: u64, lbads: u8) -> Self {
        Self {
            nsid,
            blocks,
            formats: vec![LbaFormat { ms: 0, lbads }],
            formatted: 0,
        }
    }

    /// Block size of the formatted LBA format (0 if the index is invalid or the size absurd).
    pub fn block_size(&self) -> u64 {
        self.formats
            .get(usize::from(self.formatted))
            .filter(|f| f.lbads < 32)
            .map_or(0, |f| 1u64 << f.lbads)
    }
}

/// A namespace with its contents.
#[derive(Clone, Debug)]
pub struct Namespace {
    /// Configuration.
    pub cfg: NsConfig,
    /// Contents (`blocks * block_size` bytes; empty when the format is unusable).
    pub data: Vec<u8>,
}

impl Namespace {
    /// A zero-filled namespace (contents capped at 64 MiB to keep tests small).
    pub fn new(cfg: NsConfig) -> Self {
        let bytes = cfg.blocks.saturating_mul(cfg.block_size()).min(64 << 20);
        Self {
            data: vec![0; bytes as usize],
            cfg,
        }
    }

    /// Identify Namespace data (CNS 0).
    pub fn identify(&self) -> [u8; 4096] {
        let mut b = [0u8; 4096];
        let c = &self.cfg;
        b[0..8].copy_from_slice(&c.blocks.to_le_bytes());
        b[8..16].copy_from_slice(&c.blocks.to_le_bytes());
        b[16..24].copy_from_slice(&c.blocks.to_le_bytes());
        let n = c.formats.len().clamp(1, 64);
        b[25] = (n - 1) as u8;
        // FLBAS: bits 3:0 low index, bits 6:5 the index's bits 5:4.
        b[26] = (c.formatted & 0xf) | ((c.formatted & 0x30) << 1);
        for (i, f) in c.formats.iter().take(64).enumerate() {
            let v = u32::from(f.ms) | (u32::from(f.lbads) << 16);
            b[128 + 4 * i..132 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// Controller-wide Identify settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtrlIdentity {
    /// MDTS (0: unlimited).
    pub mdts: u8,
    /// Dataset Management supported.
    pub dsm: bool,
    /// Write Zeroes supported.
    pub write_zeroes: bool,
    /// Volatile write cache present.
    pub vwc: bool,
    /// SGLs supported.
    pub sgls: bool,
    /// RTD3 entry latency in microseconds.
    pub rtd3e: u32,
    /// SQES byte.
    pub sqes: u8,
    /// CQES byte.
    pub cqes: u8,
}

impl Default for CtrlIdentity {
    fn default() -> Self {
        Self {
            mdts: 5,
            dsm: true,
            write_zeroes: true,
            vwc: true,
            sgls: true,
            rtd3e: 0,
            sqes: 0x66,
            cqes: 0x44,
        }
    }
}

impl CtrlIdentity {
    /// Identify Controller data (CNS 1) for a controller with namespace ids up to `nn`.
    pub fn identify(&self, nn: u32) -> [u8; 4096] {
        let mut b = [0u8; 4096];
        b[0..2].copy_from_slice(&0x1b36u16.to_le_bytes());
        b[4..24].copy_from_slice(b"SIM0001             ");
        b[24..64].copy_from_slice(b"rnvme simulated controller              ");
        b[64..72].copy_from_slice(b"1.0     ");
        b[77] = self.mdts;
        b[78..80].copy_from_slice(&1u16.to_le_bytes());
        b[80..84].copy_from_slice(&0x0001_0400u32.to_le_bytes());
        b[88..92].copy_from_slice(&self.rtd3e.to_le_bytes());
        b[512] = self.sqes;
        b[513] = self.cqes;
        b[516..520].copy_from_slice(&nn.to_le_bytes());
        let oncs = (u16::from(self.dsm) << 2) | (u16::from(self.write_zeroes) << 3);
        b[520..522].copy_from_slice(&oncs.to_le_bytes());
        b[525] = u8::from(self.vwc);
        b[536..540].copy_from_slice(&u32::from(self.sgls).to_le_bytes());
        b
    }
}

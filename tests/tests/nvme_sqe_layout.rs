//! The `nvme` crate's `SubmissionEntry` against a byte-level model of the 64-byte command of
//! the NVMe base specification (`struct nvme_common_command` in `include/linux/nvme.h`):
//! opcode at byte 0, flags at 1 (PSDT in bits 7:6), command id at 2..4, nsid at 4..8, dwords
//! 2-3 at 8..16, metadata pointer at 16..24, data pointer at 24..40, dwords 10-15 at 40..64,
//! all little-endian. Every random sequence of setters must leave the entry's wire bytes,
//! quadwords and accessors equal to what the model computes from the offsets alone, whatever
//! the entry's own representation is.

use nvme::{DataPointer, SglDescriptor, SubmissionEntry, SQE_SIZE};
use proptest::prelude::*;

/// The model: the wire bytes themselves.
struct Model([u8; SQE_SIZE]);

impl Model {
    fn new(opcode: u8, nsid: u32) -> Self {
        let mut b = [0u8; SQE_SIZE];
        b[0] = opcode;
        b[4..8].copy_from_slice(&nsid.to_le_bytes());
        Self(b)
    }

    fn dword(&self, n: usize) -> u32 {
        u32::from_le_bytes(self.0[4 * n..4 * n + 4].try_into().unwrap())
    }
}

#[derive(Clone, Debug)]
enum Op {
    Cid(u16),
    Cdw(usize, u32),
    Prp(u64, u64),
    Sgl(u64, u32, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<u16>().prop_map(Op::Cid),
        (0usize..18, any::<u32>()).prop_map(|(n, v)| Op::Cdw(n, v)),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| Op::Prp(a, b)),
        (any::<u64>(), any::<u32>(), any::<bool>()).prop_map(|(a, l, last)| Op::Sgl(a, l, last)),
    ]
}

fn apply(e: &mut SubmissionEntry, m: &mut Model, op: &Op) {
    match *op {
        Op::Cid(c) => {
            e.set_cid(c);
            m.0[2..4].copy_from_slice(&c.to_le_bytes());
        }
        Op::Cdw(n, v) => {
            let settable = matches!(n, 2 | 3 | 10..=15);
            assert_eq!(e.set_cdw(n, v), settable, "set_cdw({n})");
            if settable {
                m.0[4 * n..4 * n + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        Op::Prp(a, b) => {
            e.set_data_pointer(DataPointer::prp(a, b));
            m.0[1] &= !0xc0;
            m.0[24..32].copy_from_slice(&a.to_le_bytes());
            m.0[32..40].copy_from_slice(&b.to_le_bytes());
        }
        Op::Sgl(a, l, last) => {
            let d = if last {
                SglDescriptor::last_segment(a, l)
            } else {
                SglDescriptor::data_block(a, l)
            };
            e.set_data_pointer(DataPointer::Sgl(d));
            m.0[1] = (m.0[1] & !0xc0) | 0x40;
            m.0[24..40].copy_from_slice(&d.to_bytes());
        }
    }
}

fn check(e: &SubmissionEntry, m: &Model) {
    let b = &m.0;
    assert_eq!(e.to_bytes(), *b);
    assert_eq!(SubmissionEntry::from_bytes(b), *e);
    let q = e.to_qwords();
    for (i, &v) in q.iter().enumerate() {
        assert_eq!(
            v,
            u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap())
        );
    }
    assert_eq!(SubmissionEntry::from_qwords(q), *e);
    assert_eq!(e.opcode(), b[0]);
    assert_eq!(e.flags(), b[1]);
    assert_eq!(e.cid(), u16::from_le_bytes([b[2], b[3]]));
    assert_eq!(e.nsid(), m.dword(1));
    for n in 0..16 {
        assert_eq!(e.cdw(n), Some(m.dword(n)), "cdw({n})");
    }
    assert_eq!(e.cdw(16), None);
    assert_eq!(e.uses_sgl(), b[1] & 0xc0 != 0);
    let (lo, hi) = (
        u64::from_le_bytes(b[24..32].try_into().unwrap()),
        u64::from_le_bytes(b[32..40].try_into().unwrap()),
    );
    let want = if e.uses_sgl() {
        DataPointer::Sgl(SglDescriptor::from_bytes(b[24..40].try_into().unwrap()))
    } else {
        DataPointer::prp(lo, hi)
    };
    assert_eq!(e.data_pointer(), want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn setters_write_the_wire_offsets(
        opcode in any::<u8>(),
        nsid in any::<u32>(),
        ops in proptest::collection::vec(op(), 0..24),
    ) {
        let mut e = SubmissionEntry::new(opcode, nsid);
        let mut m = Model::new(opcode, nsid);
        check(&e, &m);
        for o in &ops {
            apply(&mut e, &mut m, o);
            check(&e, &m);
        }
    }

    #[test]
    fn any_wire_bytes_round_trip(b in proptest::collection::vec(any::<u8>(), SQE_SIZE)) {
        let b: [u8; SQE_SIZE] = b.try_into().unwrap();
        let e = SubmissionEntry::from_bytes(&b);
        check(&e, &Model(b));
    }
}

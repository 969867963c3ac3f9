//! `build_sgl`, `SglDescriptor` layout and `SglPolicy`.

use std::vec::Vec;

use crate::{
    build_sgl, DmaSegment, DptrError, SglDescriptor, SglKind, SglPolicy, SglPool,
    SGL_THRESHOLD_DEFAULT,
};

#[test]
fn single_segment_is_inline() {
    let mut list = [SglDescriptor::default(); 2];
    let s = build_sgl([DmaSegment::new(0xdead_beef, 3)], &mut list, 0x1001).unwrap();
    assert_eq!(s.dptr, SglDescriptor::data_block(0xdead_beef, 3));
    assert_eq!((s.list_entries, s.pool), (0, SglPool::None));
    // An empty list suffices, and its (misaligned) address is not used.
    assert!(build_sgl([DmaSegment::new(0, 1)], &mut [], 3).is_ok());
}

#[test]
fn several_segments_use_last_segment_descriptor() {
    let mut list = [SglDescriptor::default(); 256];
    let segs: Vec<_> = (0..16u64)
        .map(|i| DmaSegment::new(i * 0x10_000 + 7, 100 + i as u32))
        .collect();
    let s = build_sgl(segs.iter().copied(), &mut list, 0x8000).unwrap();
    assert_eq!(
        (s.dptr.kind(), s.dptr.addr(), s.dptr.length()),
        (SglKind::LastSegment, 0x8000, 256)
    );
    assert_eq!((s.list_entries, s.pool), (16, SglPool::Small));
    for (d, g) in list.iter().zip(&segs) {
        assert_eq!(
            (d.kind(), d.addr(), d.length()),
            (SglKind::DataBlock, g.addr, g.len)
        );
    }
    let segs: Vec<_> = (0..17u64).map(|i| DmaSegment::new(i << 20, 4096)).collect();
    assert_eq!(
        build_sgl(segs, &mut list, 0x8000).unwrap().pool,
        SglPool::Page
    );
    let segs: Vec<_> = (0..256u64)
        .map(|i| DmaSegment::new(i << 20, 4096))
        .collect();
    assert_eq!(
        build_sgl(segs, &mut list, 0x8000).unwrap().dptr.length(),
        4096
    );
}

#[test]
fn errors() {
    let mut list = [SglDescriptor::default(); 300];
    assert_eq!(build_sgl([], &mut list, 0), Err(DptrError::NoSegments));
    assert_eq!(
        build_sgl([DmaSegment::new(0, 1), DmaSegment::new(9, 0)], &mut list, 0),
        Err(DptrError::ZeroLength { index: 1 })
    );
    assert_eq!(
        build_sgl([DmaSegment::new(u64::MAX, 1)], &mut list, 0),
        Err(DptrError::AddressOverflow { index: 0 })
    );
    let segs: Vec<_> = (0..257u64).map(|i| DmaSegment::new(i << 20, 1)).collect();
    assert_eq!(
        build_sgl(segs, &mut list, 0),
        Err(DptrError::ListTooSmall {
            needed: 257,
            available: 256
        })
    );
    assert_eq!(
        build_sgl([DmaSegment::new(0, 1); 3], &mut list[..2], 0),
        Err(DptrError::ListTooSmall {
            needed: 3,
            available: 2
        })
    );
    assert_eq!(
        build_sgl([DmaSegment::new(0, 1); 2], &mut list, 0x1008),
        Err(DptrError::ListMisaligned {
            index: 0,
            addr: 0x1008
        })
    );
}

#[test]
fn descriptor_layout() {
    let d = SglDescriptor::segment(0x0807_0605_0403_0201, 0x0c0b_0a09);
    assert_eq!(
        d.to_bytes(),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0x20]
    );
    assert_eq!(d.kind(), SglKind::Segment);
    assert_eq!(SglDescriptor::from_bytes(d.to_bytes()), d);
    let mut raw = d.to_bytes();
    raw[15] = 0x41;
    assert_eq!(SglDescriptor::from_bytes(raw).kind(), SglKind::Other(0x41));
    assert_eq!(core::mem::size_of::<[SglDescriptor; 256]>(), 4096);
}

#[test]
fn policy() {
    let p = SglPolicy {
        ctrl_supports_sgls: true,
        admin_queue: false,
        metadata_sgls: false,
        passthrough: false,
        sgl_threshold: SGL_THRESHOLD_DEFAULT,
    };
    assert!(p.use_sgls(32 * 1024, 1));
    assert!(!p.use_sgls(32 * 1024 - 1, 1));
    assert!(p.use_sgls(64 * 1024 - 1, 2)); // DIV_ROUND_UP: average 32768
    assert!(!p.use_sgls(64 * 1024 - 2, 2));
    assert!(p.use_sgls(1 << 20, 0)); // no segments counted as one, no division by zero
    assert!(SglPolicy {
        metadata_sgls: true,
        ..p
    }
    .use_sgls(1, 100));
    assert!(!SglPolicy {
        metadata_sgls: true,
        admin_queue: true,
        ..p
    }
    .use_sgls(1 << 20, 1));
    assert!(!SglPolicy {
        sgl_threshold: 0,
        ..p
    }
    .use_sgls(1 << 20, 1));
    assert!(SglPolicy {
        passthrough: true,
        ..p
    }
    .use_sgls(4096, 1));
}

//! Number of Queues negotiation of the `nvme` crate: the request, the parsing of the grant
//! (0-based NSQA/NCQA) and the default/poll queue plan, checked against the rules of
//! `nvme_setup_io_queues` and `nvme_setup_irqs` in drivers/nvme/host/pci.c stated as
//! invariants.

use nvme::{QueueGrant, QueuePlan, SubmissionEntry};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn plan_uses_the_grant_as_the_linux_driver_does(
        cpus in 1u32..600,
        poll in 0u16..80,
        nsqa in any::<u16>(),
        ncqa in any::<u16>(),
        vectors in 1u32..600,
    ) {
        // The request: one queue per CPU plus the poll queues, both fields 0-based.
        let want = QueuePlan::request(cpus, poll);
        prop_assert_eq!(want, (cpus + u32::from(poll)).min(65535));
        let cmd = SubmissionEntry::set_num_queues(want).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(cmd.cdw(11), Some(((want - 1) << 16) | (want - 1)));

        let grant = QueueGrant::from_result((u32::from(ncqa) << 16) | u32::from(nsqa));
        let pairs = (u32::from(nsqa).min(u32::from(ncqa)) + 1).min(65535);
        prop_assert_eq!(u32::from(grant.pairs()), pairs);
        let plan = QueuePlan::new(cpus, poll, grant, vectors).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // At least one interrupt-driven queue; never more queues than granted.
        prop_assert!(plan.default >= 1);
        prop_assert!(plan.total() <= pairs);
        // Poll queues: as many as asked, but one granted queue is kept for interrupts.
        prop_assert_eq!(u32::from(plan.poll), u32::from(poll).min(pairs - 1));
        // Default queues: what is left of the grant, at most one per CPU and per vector.
        prop_assert_eq!(u32::from(plan.default), (pairs - u32::from(plan.poll)).min(cpus).min(vectors).max(1));
    }
}

#[test]
fn no_cpu_or_vector_is_an_error() {
    let g = QueueGrant::from_result(0x0007_0007);
    assert!(QueuePlan::new(0, 0, g, 4).is_err());
    assert!(QueuePlan::new(4, 0, g, 0).is_err());
    assert!(SubmissionEntry::set_num_queues(0).is_err());
}

//! The empty loop: the same harness with nothing inside, so the cost of the loop and of the
//! timer and counter reads around each batch can be reported (and subtracted on request).

use super::Workload;

pub(crate) struct EmptyLoop;

impl Workload for EmptyLoop {
    fn run_batch(&mut self, ops: u64) -> anyhow::Result<()> {
        for i in 0..ops {
            // Keeps the loop from being folded away while adding no memory traffic.
            std::hint::black_box(i);
        }
        Ok(())
    }
}

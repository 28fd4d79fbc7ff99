//! Sharing what is the same across sessions. Most sessions of a project start with the same
//! options, networks, connection, Connect view and empty queues, and many return to equal regions
//! later (an emptied toast queue, a closed modal). The interner lets every session that holds an
//! equal region hold the same allocation: the typed value (an `Arc`, copied on write by `evolve`)
//! and its canonical JSON bytes.
//!
//! It keeps only weak references: a region nobody holds is freed as usual, and its entry is swept
//! away once the table has grown to twice the size it had after the last sweep.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::session::wire::CanonicalState;
use crate::session::{Region, Regions, SessionState};

struct Entry {
    bytes: Weak<[u8]>,
    /// The typed region (`None` for regions that are not behind an `Arc`: only their bytes are shared).
    value: Option<Weak<dyn Any + Send + Sync>>,
}

impl Entry {
    /// Unusable once either half is gone.
    fn is_dead(&self) -> bool {
        self.bytes.strong_count() == 0 || self.value.as_ref().is_some_and(|v| v.strong_count() == 0)
    }
}

#[derive(Default)]
struct Table {
    entries: HashMap<(Region, u64), Vec<Entry>>,
    len: usize,
    sweep_at: usize,
}

#[derive(Default)]
pub(crate) struct Interner {
    table: Mutex<Table>,
}

/// The first entry size at which the table is swept.
const FIRST_SWEEP: usize = 1024;

impl Interner {
    /// Replaces the `regions` of `state` (and their bytes in `canonical`) with equal ones another
    /// session already holds, and offers the rest to later sessions.
    pub(crate) fn share(&self, state: &mut SessionState, canonical: &mut CanonicalState, regions: Regions) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        for region in regions.iter() {
            match region {
                Region::ConnectView => self.share_typed(&mut table, region, &mut state.connect_view, canonical),
                Region::Connection => self.share_typed(&mut table, region, &mut state.connection, canonical),
                Region::Modal => self.share_typed(&mut table, region, &mut state.modal, canonical),
                Region::Networks => self.share_typed(&mut table, region, &mut state.networks, canonical),
                Region::Options => self.share_typed(&mut table, region, &mut state.options, canonical),
                Region::Requests => self.share_typed(&mut table, region, &mut state.requests, canonical),
                Region::Router => self.share_typed(&mut table, region, &mut state.router, canonical),
                Region::Siwx => self.share_typed(&mut table, region, &mut state.siwx, canonical),
                Region::Toasts => self.share_typed(&mut table, region, &mut state.toasts, canonical),
                Region::Activity => self.share_typed(&mut table, region, &mut state.activity, canonical),
                Region::Balances => self.share_typed(&mut table, region, &mut state.balances, canonical),
                Region::ChainService => self.share_typed(&mut table, region, &mut state.chain_service, canonical),
                Region::NetworkSwitch => self.share_typed(&mut table, region, &mut state.network_switch, canonical),
                Region::Send => self.share_typed(&mut table, region, &mut state.send, canonical),
                Region::HostRequests => self.share_typed(&mut table, region, &mut state.host_requests, canonical),
                Region::Embedded => self.share_typed(&mut table, region, &mut state.embedded, canonical),
                Region::Origin | Region::Project | Region::Started => self.share_bytes(&mut table, region, canonical),
            }
        }
        if table.len >= table.sweep_at.max(FIRST_SWEEP) {
            table.entries.retain(|_, list| {
                list.retain(|e| !e.is_dead());
                !list.is_empty()
            });
            table.len = table.entries.values().map(Vec::len).sum();
            table.sweep_at = table.len * 2;
        }
    }

    /// Lets go of a state its session drops (hibernating or stopping): the entries of its regions
    /// that nobody else holds leave the table now, and with them their allocations. A `Weak` keeps
    /// its `Arc`'s allocation until it is dropped (for the bytes, `Arc<[u8]>`, that is the bytes
    /// themselves), and the sweep in `share` never comes once every session is asleep: without
    /// this, a hibernated session's unique regions stayed resident.
    pub(crate) fn release(&self, state: SessionState, canonical: CanonicalState) {
        let keys = Region::ALL.map(|region| key(region, &canonical));
        drop(state);
        drop(canonical);
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        for key in keys {
            let Some(list) = table.entries.get_mut(&key) else { continue };
            let before = list.len();
            list.retain(|e| !e.is_dead());
            let (removed, empty) = (before - list.len(), list.is_empty());
            if empty {
                table.entries.remove(&key);
            }
            table.len = table.len.saturating_sub(removed);
        }
    }

    fn share_typed<T: PartialEq + Send + Sync + 'static>(
        &self,
        table: &mut Table,
        region: Region,
        value: &mut Arc<T>,
        canonical: &mut CanonicalState,
    ) {
        let bytes = canonical.region(region).clone();
        let list = table.entries.entry(key(region, canonical)).or_default();
        for entry in list.iter() {
            let (Some(shared_bytes), Some(shared_value)) = (entry.bytes.upgrade(), entry.value.as_ref().and_then(Weak::upgrade)) else {
                continue;
            };
            // Equal bytes are not enough on their own: the typed values must be equal too.
            if *shared_bytes == *bytes
                && let Ok(shared_value) = shared_value.downcast::<T>()
                && *shared_value == **value
            {
                *value = shared_value;
                canonical.set_region(region, shared_bytes);
                return;
            }
        }
        let any: Arc<dyn Any + Send + Sync> = value.clone();
        list.push(Entry { bytes: Arc::downgrade(&bytes), value: Some(Arc::downgrade(&any)) });
        table.len += 1;
    }

    fn share_bytes(&self, table: &mut Table, region: Region, canonical: &mut CanonicalState) {
        let bytes = canonical.region(region).clone();
        let list = table.entries.entry(key(region, canonical)).or_default();
        for entry in list.iter() {
            if let Some(shared) = entry.bytes.upgrade().filter(|b| **b == *bytes) {
                canonical.set_region(region, shared);
                return;
            }
        }
        list.push(Entry { bytes: Arc::downgrade(&bytes), value: None });
        table.len += 1;
    }

    /// Live entries, for tests.
    #[cfg(test)]
    fn live(&self) -> usize {
        let table = self.table.lock().unwrap();
        table.entries.values().flatten().filter(|e| !e.is_dead()).count()
    }
}

/// A region's entry key: the first 8 bytes of the SHA-256 the canonical state already keeps of
/// its bytes (no second pass over them). Entries are told apart by comparing bytes and values, so
/// the key only has to spread them.
fn key(region: Region, canonical: &CanonicalState) -> (Region, u64) {
    let digest = canonical.region_digest(region);
    (region, u64::from_le_bytes(digest[..8].try_into().expect("a SHA-256 has 32 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{self, wire};
    use crate::testing::started;

    fn fresh() -> (SessionState, CanonicalState) {
        let state = started().iter().fold(SessionState::default(), session::evolve);
        let canonical = CanonicalState::of(&state);
        (state, canonical)
    }

    #[test]
    fn a_released_state_leaves_no_entry_holding_its_allocations() {
        // Given a session whose regions are its own, and one that shares them
        let interner = Interner::default();
        let (mut a, mut a_bytes) = fresh();
        interner.share(&mut a, &mut a_bytes, Regions::ALL);
        let (mut b, mut b_bytes) = fresh();
        interner.share(&mut b, &mut b_bytes, Regions::ALL);
        let origin = Arc::downgrade(a_bytes.region(Region::Origin));
        let connection = Arc::downgrade(&a.connection);
        // When the first is released, the other still holds the regions: their entries stay
        interner.release(a, a_bytes);
        assert_eq!(interner.live(), Region::ALL.len());
        assert_eq!((origin.weak_count(), connection.weak_count()), (2, 2), "the table's and ours");
        // When the second is released too, the table holds nothing of theirs (no weak reference
        // that would keep an allocation)
        interner.release(b, b_bytes);
        assert_eq!((origin.strong_count(), connection.strong_count()), (0, 0));
        let table = interner.table.lock().unwrap();
        assert_eq!((table.entries.len(), table.len), (0, 0));
    }

    #[test]
    fn equal_regions_of_two_sessions_become_one_allocation() {
        let interner = Interner::default();
        let (mut a, mut a_bytes) = fresh();
        let (mut b, mut b_bytes) = fresh();
        assert!(!Arc::ptr_eq(&a.connection, &b.connection), "two folds start with two copies");
        interner.share(&mut a, &mut a_bytes, Regions::ALL);
        interner.share(&mut b, &mut b_bytes, Regions::ALL);
        assert!(Arc::ptr_eq(&a.connection, &b.connection));
        assert!(Arc::ptr_eq(&a.options, &b.options));
        assert!(Arc::ptr_eq(a_bytes.region(Region::Origin), b_bytes.region(Region::Origin)));
        // Sharing changes nothing anyone can see.
        assert_eq!(a, fresh().0);
        assert_eq!(b_bytes.hash(), wire::state_hash(&wire::to_value(&b)));
    }

    #[test]
    fn a_shared_region_is_copied_on_write_and_dead_entries_are_swept() {
        let interner = Interner::default();
        let (mut a, mut a_bytes) = fresh();
        let (mut b, mut b_bytes) = fresh();
        interner.share(&mut a, &mut a_bytes, Regions::ALL);
        interner.share(&mut b, &mut b_bytes, Regions::ALL);
        let shown = session::Event::ModalOpened {};
        let a2 = session::evolve(a.clone(), &shown);
        assert!(a2.modal.is_open() && !b.modal.is_open(), "b's modal is not a's");
        drop((a, a_bytes, a2, b, b_bytes));
        assert_eq!(interner.live(), 0, "the interner keeps nothing alive");
    }
}

//! Calls in flight counted in all and per client address, each bounded: the calls forwarded for
//! hosts and frames ([`crate::ChainService::request`], [`crate::ChainService::host_read`]: how many
//! may be at the nodes at once across every session, and how many of those one client address may
//! hold), and the gateway's receipt waits per client address.
//!
//! Without a share per client, one client that opens a few sessions and has each read something
//! the node is slow to answer holds every slot, and every other project's host reads are refused
//! meanwhile. A call with no client address (a frame's call, bounded per user by the embedded
//! wallet) counts only towards the total.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Why a call was refused a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRefusal {
    /// As many calls as allowed in all are in flight.
    Full,
    /// The caller's client address holds its share of them.
    ClientShare,
}

impl SlotRefusal {
    /// The metric label a refused forwarded call is counted under
    /// (`vestibule_chain_forwarded_refused{kind}`).
    pub fn kind(self) -> &'static str {
        match self {
            SlotRefusal::Full => "all",
            SlotRefusal::ClientShare => "client",
        }
    }
}

/// The slots of calls in flight: at most `total` at once, at most `per_client` of them for one
/// client address.
#[derive(Debug)]
pub struct CallSlots {
    total: usize,
    per_client: usize,
    taken: Mutex<Taken>,
    /// Told whenever a slot is given back, for [`CallSlots::take`]'s waiters.
    freed: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Taken {
    all: usize,
    /// Only addresses holding a slot: an entry is removed with its last slot, so there are never
    /// more entries than calls in flight.
    by_client: HashMap<IpAddr, usize>,
}

impl CallSlots {
    /// `total` and `per_client` are at least 1, and a client's share is at most the total.
    pub fn new(total: usize, per_client: usize) -> Arc<Self> {
        let total = total.max(1);
        Arc::new(Self { total, per_client: per_client.clamp(1, total), taken: Mutex::default(), freed: tokio::sync::Notify::new() })
    }

    /// A slot for one call of `client` (none: a call no client address is known for), held until
    /// the returned guard is dropped; or why not.
    pub fn try_take(self: &Arc<Self>, client: Option<IpAddr>) -> Result<CallSlot, SlotRefusal> {
        let mut taken = self.taken.lock().expect("call slots lock");
        if let Some(client) = client
            && taken.by_client.get(&client).copied().unwrap_or(0) >= self.per_client
        {
            return Err(SlotRefusal::ClientShare);
        }
        if taken.all >= self.total {
            return Err(SlotRefusal::Full);
        }
        taken.all += 1;
        if let Some(client) = client {
            *taken.by_client.entry(client).or_default() += 1;
        }
        Ok(CallSlot { slots: self.clone(), client })
    }

    /// A slot for one call of `client` as soon as one is free, for a call that may wait its turn
    /// rather than be refused. Waits hold nothing; a waiter dropped (cancelled) leaves no trace.
    pub async fn take(self: &Arc<Self>, client: Option<IpAddr>) -> CallSlot {
        loop {
            // Registered before looking, so a slot given back in between is not missed.
            let freed = self.freed.notified();
            let mut freed = std::pin::pin!(freed);
            freed.as_mut().enable();
            if let Ok(slot) = self.try_take(client) {
                return slot;
            }
            freed.await;
        }
    }

    /// Calls in flight in all, and of `client`.
    pub fn in_flight(&self, client: Option<IpAddr>) -> (usize, usize) {
        let taken = self.taken.lock().expect("call slots lock");
        (taken.all, client.and_then(|c| taken.by_client.get(&c).copied()).unwrap_or(0))
    }

    fn give_back(&self, client: Option<IpAddr>) {
        let mut taken = self.taken.lock().expect("call slots lock");
        taken.all -= 1;
        if let Some(client) = client
            && let Some(held) = taken.by_client.get_mut(&client)
        {
            *held -= 1;
            if *held == 0 {
                taken.by_client.remove(&client);
            }
        }
        drop(taken);
        self.freed.notify_waiters();
    }
}

/// One call's slot; given back when dropped (the call answered, failed or was cancelled).
#[derive(Debug)]
pub struct CallSlot {
    slots: Arc<CallSlots>,
    client: Option<IpAddr>,
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.slots.give_back(self.client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([192, 0, 2, last]))
    }

    #[test]
    fn a_client_holding_its_share_is_refused_while_another_client_is_served() {
        // Given four slots in all, two per client, and client 1 holding two
        let slots = CallSlots::new(4, 2);
        let held = [slots.try_take(ip(1)).unwrap(), slots.try_take(ip(1)).unwrap()];

        // When client 1 and client 2 each ask for one more
        // Then client 1 is refused for its share, and client 2 is served
        assert_eq!(slots.try_take(ip(1)).unwrap_err(), SlotRefusal::ClientShare);
        let other = slots.try_take(ip(2)).unwrap();
        assert_eq!(slots.in_flight(ip(1)), (3, 2));

        // And once one of client 1's calls is done, it may make another
        drop(held);
        drop(other);
        assert_eq!(slots.in_flight(ip(1)), (0, 0));
        let _again = slots.try_take(ip(1)).unwrap();
    }

    #[test]
    fn when_every_slot_is_taken_anyone_is_refused_and_a_refusal_takes_nothing() {
        // Given three slots, two per client, taken by clients 1 and 2 and a call with no address
        let slots = CallSlots::new(3, 2);
        let _held = [slots.try_take(ip(1)).unwrap(), slots.try_take(ip(2)).unwrap(), slots.try_take(None).unwrap()];

        // When a third client and another call with no address ask
        // Then both are refused because all are taken
        assert_eq!(slots.try_take(ip(3)).unwrap_err(), SlotRefusal::Full);
        assert_eq!(slots.try_take(None).unwrap_err(), SlotRefusal::Full);
        // And the refusals hold nothing
        assert_eq!(slots.in_flight(ip(3)), (3, 0));
        assert_eq!(slots.taken.lock().unwrap().by_client.len(), 2);
    }

    #[test]
    fn calls_with_no_client_address_count_only_towards_the_total() {
        let slots = CallSlots::new(3, 1);
        let _held = [slots.try_take(None).unwrap(), slots.try_take(None).unwrap()];
        assert_eq!(slots.in_flight(None), (2, 0));
        let _one = slots.try_take(ip(1)).unwrap();
    }

    #[tokio::test]
    async fn a_call_that_waits_its_turn_gets_its_client_s_next_free_slot_and_others_do_not_wait() {
        // Given one slot per client, held by client 1
        let slots = CallSlots::new(8, 1);
        let held = slots.try_take(ip(1)).unwrap();

        // When client 1 waits its turn
        let waiting = tokio::spawn({
            let slots = slots.clone();
            async move { slots.take(ip(1)).await }
        });
        tokio::task::yield_now().await;

        // Then it waits, holding nothing, while client 2 takes a slot at once
        assert!(!waiting.is_finished());
        assert_eq!(slots.in_flight(ip(1)), (1, 1));
        let _other = slots.take(ip(2)).await;
        // And once client 1's slot is given back, the waiting call has it
        drop(held);
        let slot = waiting.await.unwrap();
        assert_eq!(slots.in_flight(ip(1)), (2, 1));
        drop(slot);
        assert_eq!(slots.in_flight(ip(1)), (1, 0));
    }

    #[test]
    fn a_share_larger_than_the_total_is_the_total() {
        let slots = CallSlots::new(2, 32);
        let _held = [slots.try_take(ip(1)).unwrap(), slots.try_take(ip(1)).unwrap()];
        assert_eq!(slots.try_take(ip(1)).unwrap_err(), SlotRefusal::ClientShare);
    }
}

//! Calls in flight counted per client address: [`CallSlots`], in all and per client, refusing one
//! more (the calls forwarded for hosts and frames, [`crate::ChainService::request`] and
//! [`crate::ChainService::host_read`]: how many may be at the nodes at once across every session,
//! and how many of those one client address may hold); and [`ClientTurns`], per client, one more
//! waiting its turn in order (the gateway's receipt waits).
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
        Arc::new(Self { total, per_client: per_client.clamp(1, total), taken: Mutex::default() })
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

/// At most `per_client` calls of each client address at once; one more waits its turn, and the
/// turns of one address come in the order they were asked for. A call with no address is not
/// bounded. A turn given back goes straight to the address's next waiter, so a newcomer cannot
/// take it first, and only that waiter is woken.
#[derive(Debug)]
pub struct ClientTurns {
    per_client: usize,
    by_client: Mutex<HashMap<IpAddr, Turns>>,
}

#[derive(Debug, Default)]
struct Turns {
    running: usize,
    /// Waiters in order; one whose call was cancelled is skipped when its turn comes (its
    /// receiver is gone), and dropped when another waiter joins.
    waiting: std::collections::VecDeque<tokio::sync::oneshot::Sender<Turn>>,
}

impl ClientTurns {
    /// `per_client` is at least 1.
    pub fn new(per_client: usize) -> Arc<Self> {
        Arc::new(Self { per_client: per_client.max(1), by_client: Mutex::default() })
    }

    /// A turn for `client` now, if its address runs fewer than `per_client` calls and nobody of
    /// it is waiting.
    pub fn try_take(self: &Arc<Self>, client: Option<IpAddr>) -> Option<Turn> {
        let Some(key) = client else { return Some(Turn::unbounded()) };
        let mut by_client = self.by_client.lock().expect("client turns lock");
        let turns = by_client.entry(key).or_default();
        if turns.running >= self.per_client || !turns.waiting.is_empty() {
            return None;
        }
        turns.running += 1;
        Some(Turn { turns: Some(self.clone()), client: key })
    }

    /// A turn for `client`, now or once the calls of its address before it are done. Waiting
    /// holds nothing; a waiter cancelled leaves its place to the next.
    pub async fn take(self: &Arc<Self>, client: Option<IpAddr>) -> Turn {
        let Some(key) = client else { return Turn::unbounded() };
        let (sender, receiver) = tokio::sync::oneshot::channel();
        {
            // Looked at and joined under one lock: a turn given back in between would be missed.
            let mut by_client = self.by_client.lock().expect("client turns lock");
            let turns = by_client.entry(key).or_default();
            turns.waiting.retain(|waiter| !waiter.is_closed());
            if turns.running < self.per_client && turns.waiting.is_empty() {
                turns.running += 1;
                return Turn { turns: Some(self.clone()), client: key };
            }
            turns.waiting.push_back(sender);
        }
        // The sender is dropped unsent only with its entry, which has none while someone waits.
        receiver.await.expect("a waiter's turn is handed over, never dropped")
    }

    /// Calls of `client` running and waiting.
    pub fn of(&self, client: IpAddr) -> (usize, usize) {
        let by_client = self.by_client.lock().expect("client turns lock");
        by_client.get(&client).map_or((0, 0), |t| (t.running, t.waiting.iter().filter(|w| !w.is_closed()).count()))
    }

    fn give_back(self: &Arc<Self>, client: IpAddr) {
        let mut by_client = self.by_client.lock().expect("client turns lock");
        let Some(turns) = by_client.get_mut(&client) else { return };
        while let Some(next) = turns.waiting.pop_front() {
            match next.send(Turn { turns: Some(self.clone()), client }) {
                // Handed over: the address still runs as many.
                Ok(()) => return,
                // That waiter was cancelled: the turn is not given back again when dropped here.
                Err(mut unsent) => unsent.turns = None,
            }
        }
        turns.running -= 1;
        if turns.running == 0 {
            by_client.remove(&client);
        }
    }
}

/// One call's turn; given back (to the address's next waiter, if any) when dropped.
#[derive(Debug)]
pub struct Turn {
    /// None: a call with no address, or a turn that was never handed over.
    turns: Option<Arc<ClientTurns>>,
    client: IpAddr,
}

impl Turn {
    fn unbounded() -> Self {
        Self { turns: None, client: IpAddr::from([0, 0, 0, 0]) }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(turns) = self.turns.take() {
            turns.give_back(self.client);
        }
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

    #[test]
    fn a_share_larger_than_the_total_is_the_total() {
        let slots = CallSlots::new(2, 32);
        let _held = [slots.try_take(ip(1)).unwrap(), slots.try_take(ip(1)).unwrap()];
        assert_eq!(slots.try_take(ip(1)).unwrap_err(), SlotRefusal::ClientShare);
    }

    #[tokio::test]
    async fn turns_of_one_address_come_in_order_a_newcomer_cannot_take_one_first_and_other_addresses_do_not_wait() {
        // Given one turn per address, held by client 1, and two of its calls waiting, in order
        let turns = ClientTurns::new(1);
        let held = turns.try_take(ip(1)).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiter = |n: u32| {
            let (turns, order) = (turns.clone(), order.clone());
            tokio::spawn(async move {
                let turn = turns.take(ip(1)).await;
                order.lock().unwrap().push(n);
                turn
            })
        };
        let first = waiter(1);
        tokio::task::yield_now().await;
        let second = waiter(2);
        tokio::task::yield_now().await;
        assert_eq!(turns.of(ip(1).unwrap()), (1, 2));

        // When the held turn is given back, with a newcomer of the same address asking at once
        drop(held);
        // Then the newcomer waits, the first waiter has the turn, and another address does not wait
        assert!(turns.try_take(ip(1)).is_none(), "a newcomer does not overtake the waiters");
        let other = turns.try_take(ip(2)).expect("another address has its own turns");
        let turn = first.await.unwrap();
        assert_eq!(*order.lock().unwrap(), [1]);
        assert_eq!(turns.of(ip(1).unwrap()), (1, 1));
        // And then the second
        drop(turn);
        drop(second.await.unwrap());
        assert_eq!(*order.lock().unwrap(), [1, 2]);
        assert_eq!(turns.of(ip(1).unwrap()), (0, 0));
        drop(other);
    }

    #[tokio::test]
    async fn a_cancelled_waiter_leaves_its_place_to_the_next_and_nothing_leaks() {
        let turns = ClientTurns::new(1);
        let held = turns.try_take(ip(1)).unwrap();
        let cancelled = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(ip(1)).await }
        });
        tokio::task::yield_now().await;
        let next = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(ip(1)).await }
        });
        tokio::task::yield_now().await;
        cancelled.abort();
        assert!(cancelled.await.unwrap_err().is_cancelled());
        drop(held);
        drop(next.await.unwrap());
        assert_eq!(turns.of(ip(1).unwrap()), (0, 0));
        assert!(turns.by_client.lock().unwrap().is_empty());
        // A call with no address is not bounded.
        let _a = turns.try_take(None).unwrap();
        let _b = turns.try_take(None).unwrap();
    }
}

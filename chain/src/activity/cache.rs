//! Activity pages kept a short time for every session (decision 0912): per (network, address,
//! cursor), bounded in entries and in bytes, dropped for an address when a transaction from or to
//! it is mined. A plain structure whose reads take `now` (decision 0902), so tests drive time.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use alloy::primitives::Address;
use tokio::time::Instant;

use super::{ActivityCursor, ActivityPage, Transaction, Transfer, TransferAsset};
use crate::NetworkId;

/// How long a page is reused across sessions. The spec gives no figure for activity (§7, §9); its
/// other chain-data caches are 30 s (balances, native balance, `wallet_getAssets`), so activity
/// takes the same. The account's own transactions do not wait for it: a mined receipt drops the
/// pages (see [`ActivityCache::invalidate`]).
pub const ACTIVITY_CACHE_TTL: Duration = Duration::from_secs(30);
/// Most pages kept at once.
pub const MAX_CACHED_ACTIVITY_PAGES: usize = 10_000;
/// Most bytes of pages kept at once (as estimated by [`page_bytes`]).
pub const MAX_CACHED_ACTIVITY_BYTES: usize = 64 * 1024 * 1024;

/// (network, account, cursor; `None` for the newest page).
pub type ActivityKey = (NetworkId, Address, Option<ActivityCursor>);

#[derive(Debug)]
struct Entry {
    at: Instant,
    bytes: usize,
    /// Which insertion this is (the order queue may still hold older ones for the key).
    seq: u64,
    page: ActivityPage,
}

/// Pages by (network, address, cursor), oldest dropped first when a bound is reached.
#[derive(Debug)]
pub struct ActivityCache {
    ttl: Duration,
    max_entries: usize,
    max_bytes: usize,
    entries: HashMap<ActivityKey, Entry>,
    /// Insertion order (which, with a clock that does not go back, is age order); items whose
    /// `seq` no longer matches their entry are left-overs, skipped and compacted away.
    order: VecDeque<(u64, ActivityKey)>,
    next_seq: u64,
    bytes: usize,
}

/// What an insertion dropped to stay within the bounds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Inserted {
    pub stored: bool,
    /// Live (unexpired) pages dropped because a bound was reached.
    pub evicted: usize,
}

impl ActivityCache {
    pub fn new(ttl: Duration, max_entries: usize, max_bytes: usize) -> Self {
        Self { ttl, max_entries: max_entries.max(1), max_bytes, entries: HashMap::new(), order: VecDeque::new(), next_seq: 0, bytes: 0 }
    }

    /// The page stored less than `ttl` before `now`.
    pub fn get(&self, key: &ActivityKey, now: Instant) -> Option<ActivityPage> {
        self.entries.get(key).filter(|e| now.saturating_duration_since(e.at) < self.ttl).map(|e| e.page.clone())
    }

    /// Stores `page` as of `now`, dropping expired pages and then the oldest until both bounds
    /// hold. A page larger than the byte bound on its own is not stored.
    pub fn insert(&mut self, key: ActivityKey, page: ActivityPage, now: Instant) -> Inserted {
        let bytes = page_bytes(&page);
        self.remove(&key);
        if bytes > self.max_bytes {
            return Inserted::default();
        }
        let mut evicted = 0;
        while self.entries.len() + 1 > self.max_entries || self.bytes + bytes > self.max_bytes {
            let Some((seq, oldest)) = self.order.pop_front() else { break };
            if self.entries.get(&oldest).is_some_and(|e| e.seq == seq) {
                let entry = self.remove(&oldest).expect("present");
                if now.saturating_duration_since(entry.at) < self.ttl {
                    evicted += 1;
                }
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.push_back((seq, key.clone()));
        self.bytes += bytes;
        self.entries.insert(key, Entry { at: now, bytes, seq, page });
        if self.order.len() > 2 * self.entries.len() + 64 {
            let entries = &self.entries;
            self.order.retain(|(seq, key)| entries.get(key).is_some_and(|e| e.seq == *seq));
        }
        Inserted { stored: true, evicted }
    }

    /// Drops every page of `address` on `network`; gives how many.
    pub fn invalidate(&mut self, network: NetworkId, address: Address) -> usize {
        let keys: Vec<ActivityKey> = self.entries.keys().filter(|(n, a, _)| *n == network && *a == address).cloned().collect();
        for key in &keys {
            self.remove(key);
        }
        keys.len()
    }

    fn remove(&mut self, key: &ActivityKey) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.bytes -= entry.bytes;
        Some(entry)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The estimated bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// An estimate of the memory a page holds: its structures and the heap of their strings.
pub fn page_bytes(page: &ActivityPage) -> usize {
    let cursor = |c: &Option<ActivityCursor>| c.as_ref().map_or(0, |c| c.0.len());
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let transfer = |t: &Transfer| {
        size_of::<Transfer>()
            + match &t.asset {
                TransferAsset::Native { symbol, .. } => symbol.len(),
                TransferAsset::Erc20 { symbol, .. } => text(symbol),
                TransferAsset::Nft { name, preview_url, .. } => text(name) + text(preview_url),
            }
    };
    let transaction = |t: &Transaction| size_of::<Transaction>() + t.transfers.iter().map(transfer).sum::<usize>();
    size_of::<ActivityPage>() + cursor(&page.next) + page.transactions.iter().map(transaction).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{B256, U256};

    use crate::activity::{Direction, OperationType, TransactionStatus};

    const NET: NetworkId = NetworkId::eip155(1);

    fn page(transactions: usize) -> ActivityPage {
        let tx = Transaction {
            hash: B256::ZERO,
            network: NET,
            block_number: 1,
            index: 0,
            mined_at: 0,
            status: TransactionStatus::Confirmed,
            from: Address::ZERO,
            to: None,
            operation: OperationType::Send,
            transfers: vec![Transfer {
                asset: TransferAsset::Native { symbol: "ETH".into(), decimals: 18 },
                from: Address::ZERO,
                to: Address::ZERO,
                amount: U256::from(1),
                direction: Direction::Out,
            }],
        };
        ActivityPage { transactions: vec![tx; transactions], next: None }
    }

    fn key(n: u8, cursor: Option<&str>) -> ActivityKey {
        (NET, Address::repeat_byte(n), cursor.map(|c| ActivityCursor(c.into())))
    }

    #[test]
    fn pages_expire_after_the_ttl() {
        let start = Instant::now();
        let mut cache = ActivityCache::new(Duration::from_secs(30), 10, 1 << 20);
        cache.insert(key(1, None), page(1), start);
        assert!(cache.get(&key(1, None), start + Duration::from_millis(29_999)).is_some());
        assert!(cache.get(&key(1, None), start + Duration::from_secs(30)).is_none());
        assert!(cache.get(&key(1, Some("before:5")), start).is_none(), "another cursor is another page");
    }

    #[test]
    fn the_entry_bound_drops_the_oldest() {
        let start = Instant::now();
        let mut cache = ActivityCache::new(Duration::from_secs(30), 2, 1 << 20);
        cache.insert(key(1, None), page(1), start);
        cache.insert(key(2, None), page(1), start + Duration::from_secs(1));
        // Re-storing the first makes it the newest.
        cache.insert(key(1, None), page(1), start + Duration::from_secs(2));
        let inserted = cache.insert(key(3, None), page(1), start + Duration::from_secs(3));
        assert_eq!(inserted, Inserted { stored: true, evicted: 1 });
        assert_eq!(cache.len(), 2);
        let now = start + Duration::from_secs(3);
        assert!(cache.get(&key(2, None), now).is_none(), "the oldest went");
        assert!(cache.get(&key(1, None), now).is_some() && cache.get(&key(3, None), now).is_some());
    }

    #[test]
    fn the_byte_bound_holds_and_a_page_too_large_is_not_kept() {
        let start = Instant::now();
        let one = page_bytes(&page(10));
        let mut cache = ActivityCache::new(Duration::from_secs(30), 100, 2 * one + one / 2);
        for n in 0..5 {
            cache.insert(key(n, None), page(10), start);
            assert!(cache.bytes() <= 2 * one + one / 2);
        }
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.bytes(), 2 * one);
        assert!(!cache.insert(key(9, None), page(30), start).stored);
        assert!(cache.get(&key(9, None), start).is_none());
    }

    #[test]
    fn invalidation_drops_every_page_of_the_address_only() {
        let start = Instant::now();
        let mut cache = ActivityCache::new(Duration::from_secs(30), 10, 1 << 20);
        cache.insert(key(1, None), page(1), start);
        cache.insert(key(1, Some("before:9")), page(1), start);
        cache.insert(key(2, None), page(1), start);
        assert_eq!(cache.invalidate(NET, Address::repeat_byte(1)), 2);
        assert!(cache.get(&key(1, None), start).is_none());
        assert!(cache.get(&key(2, None), start).is_some());
        assert_eq!(cache.bytes(), page_bytes(&page(1)));
        // Many re-inserts leave the order queue bounded.
        for i in 0..1000u64 {
            cache.insert(key(2, None), page(1), start + Duration::from_millis(i));
        }
        assert!(cache.order.len() <= 2 * cache.len() + 64 + 1);
    }
}

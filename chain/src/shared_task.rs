//! Work shared by every caller that asks for the same thing while it runs, and stopped when none
//! waits for it any more.
//!
//! A task runs on its own (spawned), so that it completes while any caller still waits, whoever
//! started it; each caller holds a [`Waiting`], and when the last one is dropped the task is
//! aborted and leaves the table. Without the last rule a caller that went away left its work
//! running, counted by no bound the caller was under: an outside review kept 352 calls at a node
//! against caps of 32 per client and 256 in all by reloading, and ~2,000 balance fetches with 50
//! sessions naming new accounts, still running after every socket had closed.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use futures_util::FutureExt;
use futures_util::future::Shared;
use tokio::sync::oneshot;

type Answer<T> = Shared<oneshot::Receiver<T>>;
type Table<K, T> = Arc<Mutex<HashMap<K, Running<K, T>>>>;

struct Running<K: Hash + Eq, T> {
    /// Which task this is: a later one may take the same key once this one is stopped.
    generation: u64,
    answer: Answer<T>,
    /// Held by the callers waiting, not by the table.
    waiters: Weak<StopWhenUnwaited<K, T>>,
}

/// Aborts the task of `generation` under `key`, and takes it out of the table, when dropped: by the
/// last caller waiting for it (a finished task is not affected).
struct StopWhenUnwaited<K: Hash + Eq, T> {
    task: tokio::task::AbortHandle,
    table: Table<K, T>,
    key: K,
    generation: u64,
}

impl<K: Hash + Eq, T> Drop for StopWhenUnwaited<K, T> {
    fn drop(&mut self) {
        self.task.abort();
        let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if table.get(&self.key).is_some_and(|running| running.generation == self.generation) {
            table.remove(&self.key);
        }
    }
}

/// The tasks running now, by what they compute.
pub struct SharedTasks<K: Hash + Eq, T> {
    table: Table<K, T>,
    generations: AtomicU64,
}

impl<K: Hash + Eq, T> Default for SharedTasks<K, T> {
    fn default() -> Self {
        Self { table: Arc::default(), generations: AtomicU64::new(0) }
    }
}

/// A caller's wait for a shared task: its result, or `None` if the task ended without one (it
/// panicked). Dropping it lets the task go when no one else waits.
pub struct Waiting<K: Hash + Eq, T> {
    answer: Answer<T>,
    _waiting: Arc<StopWhenUnwaited<K, T>>,
}

impl<K: Hash + Eq, T: Clone> Future for Waiting<K, T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.answer.poll_unpin(cx).map(Result::ok)
    }
}

/// What [`SharedTasks::join_or_spawn`] did.
pub enum Joined<K: Hash + Eq, T, I> {
    /// The same work was running: this caller waits for it too.
    Shared(Waiting<K, T>),
    /// It was not: this caller's task runs now.
    Started(Waiting<K, T>),
    /// It was not, and `capacity` tasks run already: nothing was started; the task's input back.
    Full(I),
}

impl<K, T> SharedTasks<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    /// Waits for the task running for `key`, or spawns `task(input)` for it unless `capacity`
    /// tasks run already. Needs a tokio runtime.
    pub fn join_or_spawn<I, F>(&self, key: K, capacity: usize, input: I, task: impl FnOnce(I) -> F) -> Joined<K, T, I>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(running) = table.get(&key)
            && let Some(waiting) = running.waiters.upgrade()
        {
            return Joined::Shared(Waiting { answer: running.answer.clone(), _waiting: waiting });
        }
        // A task whose waiters are all gone is being stopped: it is replaced.
        let replacing = table.contains_key(&key);
        if !replacing && table.len() >= capacity {
            return Joined::Full(input);
        }
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        let (answer_tx, answer_rx) = oneshot::channel();
        let answer = answer_rx.shared();
        let work = task(input);
        let finished = (self.table.clone(), key.clone());
        let handle = tokio::spawn(async move {
            let result = work.await;
            let (table, key) = finished;
            let mut table = table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if table.get(&key).is_some_and(|running| running.generation == generation) {
                table.remove(&key);
            }
            let _ = answer_tx.send(result);
        });
        let waiting = Arc::new(StopWhenUnwaited { task: handle.abort_handle(), table: self.table.clone(), key: key.clone(), generation });
        table.insert(key, Running { generation, answer: answer.clone(), waiters: Arc::downgrade(&waiting) });
        Joined::Started(Waiting { answer, _waiting: waiting })
    }

    /// Tasks running now.
    pub fn len(&self) -> usize {
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::sync::Semaphore;

    use super::*;

    /// Work that counts its starts and its stops before answering, answering once `gate` gives it
    /// a permit.
    #[derive(Clone)]
    struct Work {
        started: Arc<AtomicUsize>,
        stopped: Arc<AtomicUsize>,
        gate: Arc<Semaphore>,
    }

    impl Default for Work {
        fn default() -> Self {
            Self { started: Arc::default(), stopped: Arc::default(), gate: Arc::new(Semaphore::new(0)) }
        }
    }

    struct Unanswered(Arc<AtomicUsize>, bool);
    impl Drop for Unanswered {
        fn drop(&mut self) {
            if !self.1 {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    impl Work {
        fn run(&self, answer: u32) -> impl Future<Output = u32> + Send + 'static {
            self.started.fetch_add(1, Ordering::SeqCst);
            let (gate, unanswered) = (self.gate.clone(), Unanswered(self.stopped.clone(), false));
            async move {
                let mut unanswered = unanswered;
                gate.acquire().await.unwrap().forget();
                unanswered.1 = true;
                answer
            }
        }
    }

    async fn until(what: &str, done: impl Fn() -> bool) {
        for _ in 0..100_000 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("{what} never happened");
    }

    fn waiting(joined: Joined<&'static str, u32, u32>) -> Waiting<&'static str, u32> {
        match joined {
            Joined::Shared(w) | Joined::Started(w) => w,
            Joined::Full(_) => panic!("full"),
        }
    }

    #[tokio::test]
    async fn given_two_callers_when_the_first_goes_then_the_task_runs_on_for_the_second_and_answers_it() {
        let (tasks, work) = (SharedTasks::default(), Work::default());
        let first = waiting(tasks.join_or_spawn("k", 8, 7, |answer| work.run(answer)));
        let second = match tasks.join_or_spawn("k", 8, 8, |answer| work.run(answer)) {
            Joined::Shared(w) => w,
            _ => panic!("the same key is shared"),
        };
        drop(first);
        work.gate.add_permits(1);
        assert_eq!(second.await, Some(7));
        assert_eq!((work.started.load(Ordering::SeqCst), work.stopped.load(Ordering::SeqCst)), (1, 0));
        assert!(tasks.is_empty(), "a finished task leaves the table");
    }

    #[tokio::test]
    async fn given_every_caller_gone_then_the_task_is_stopped_and_leaves_the_table_and_the_key_starts_anew() {
        let (tasks, work) = (SharedTasks::default(), Work::default());
        let only = waiting(tasks.join_or_spawn("k", 8, 1, |answer| work.run(answer)));
        until("the task's start", || work.started.load(Ordering::SeqCst) == 1).await;
        drop(only);
        until("the task's stop", || work.stopped.load(Ordering::SeqCst) == 1).await;
        assert!(tasks.is_empty());
        let again = match tasks.join_or_spawn("k", 8, 2, |answer| work.run(answer)) {
            Joined::Started(w) => w,
            _ => panic!("a stopped task is not joined"),
        };
        work.gate.add_permits(1);
        assert_eq!(again.await, Some(2));
    }

    #[tokio::test]
    async fn given_capacity_tasks_running_then_another_key_is_refused_and_a_running_one_still_joined() {
        let (tasks, work) = (SharedTasks::default(), Work::default());
        let _a = waiting(tasks.join_or_spawn("a", 1, 1, |answer| work.run(answer)));
        assert!(matches!(tasks.join_or_spawn("b", 1, 2, |answer| work.run(answer)), Joined::Full(2)));
        assert!(matches!(tasks.join_or_spawn("a", 1, 3, |answer| work.run(answer)), Joined::Shared(_)));
        assert_eq!(work.started.load(Ordering::SeqCst), 1);
    }
}

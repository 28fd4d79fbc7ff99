//! The writer needs no new file descriptor to flush, and a failed log says so. The test lowers this
//! process's open-file limit so that no descriptor can be opened at all (it is alone in its binary,
//! so no other test shares the limit).

mod common;

use std::time::Duration;

use common::{event, new_session, temp_log};
use serde_json::json;
use vestibule_store::{EventLog, SessionId};

/// Sets the soft open-file limit to the lowest free descriptor number: every `open` now fails with
/// EMFILE. Returns the limit to restore.
fn forbid_new_descriptors() -> libc::rlimit {
    let mut old = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain libc calls on owned values.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let lowest_free = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
        assert!(lowest_free >= 0);
        libc::close(lowest_free);
        let limit = libc::rlimit { rlim_cur: lowest_free as libc::rlim_t, rlim_max: old.rlim_max };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        assert!(std::fs::File::open("/dev/null").is_err(), "no descriptor can be opened now");
    }
    old
}

fn restore(limit: libc::rlimit) {
    // SAFETY: as above.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn flushes_need_no_new_descriptor_and_a_failed_log_reports_its_failure() {
    let (_dir, log) = temp_log();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, vec![event(1)]).await.unwrap();
    assert_eq!(log.failure(), None);

    let limit = forbid_new_descriptors();
    // Durable appends: each one is flushed (and the blob directory checked) before it resolves.
    let mut appended = Vec::new();
    for n in 2..=50 {
        appended.push(log.append(s, n - 1, vec![event(n)]).await.map(|o| o.last_seq));
    }
    // A record sled stores as a blob file needs a descriptor: the log fails, and says so.
    let mut big = event(51);
    big.payload = json!({ "blob": "x".repeat(200 * 1024) }).into();
    let blob = log.append(s, 50, vec![big]).await;
    restore(limit);

    assert!(appended.iter().all(Result::is_ok), "{appended:?}");
    assert!(blob.is_err(), "{blob:?}");
    let reason = tokio::time::timeout(Duration::from_secs(10), log.failed()).await.expect("the failure is announced");
    assert_eq!(log.failure().as_deref(), Some(reason.as_str()));
    assert!(log.append(s, 50, vec![event(51)]).await.is_err(), "a failed log takes no more writes");
}

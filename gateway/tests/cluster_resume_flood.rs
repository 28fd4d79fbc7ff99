//! A proxying gateway stops routing a resume once its client has left (gateway/src/cluster.rs
//! `route`, gateway/src/ws/connection.rs). An outside review had one client resume its own large
//! session through a gateway that does not own it, 16 sockets at a time, each cut 50 ms after its
//! hello: the proxy kept retrying the attach (up to 2 × `lease_ttl`) for clients long gone, 962
//! attaches for 736 hellos, and the owner built and published a welcome of ~474 KB for each.
//!
//! One real `vestibule serve` (gateway `b`) on a real nats-server; the session's owner is played by
//! the test, an anonymous NATS client registered as gateway `fake` in `VESTIBULE_gateways` and
//! named in the session's owner entry, so that what `b` sends the owner is seen and answered (or
//! not) one message at a time. Counted in messages, never in seconds.

mod support;

use std::net::IpAddr;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use support::*;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use vestibule_actors::protocol::PROTOCOL_VERSION;
use vestibule_store_jetstream::async_nats;
use vestibule_store_jetstream::test_server::NatsServer;

/// `b` retries an attach every TTL/5 for up to 2 × TTL; NATS requests time out after 5 s (the
/// store's `request_timeout`). The TTL leaves room for an attempt after a timed-out one.
fn config(server: &NatsServer) -> String {
    format!(
        "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n\n[cluster]\nenabled = true\n\
         gateway_id = \"b\"\nlease_ttl = \"8s\"\n",
        server.url
    )
}

const FAKE_EPOCH: u64 = 4242;

/// What `b` sent the fake owner.
enum Seen {
    Attach { session: String, frames: String, reply: async_nats::Subject },
    GivenUp { frames: String },
}

/// Registers `fake` (renewed every second: the bucket's keys live one TTL), and forwards what `b`
/// sends it.
async fn fake_owner(nats: &async_nats::Client) -> mpsc::UnboundedReceiver<Seen> {
    let gateways = async_nats::jetstream::new(nats.clone()).get_key_value("VESTIBULE_gateways").await.unwrap();
    let registration = json!({ "epoch": FAKE_EPOCH }).to_string();
    gateways.put("fake", registration.clone().into()).await.unwrap();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = gateways.put("fake", registration.clone().into()).await;
        }
    });
    let (tx, rx) = mpsc::unbounded_channel();
    let mut attaches = nats.subscribe("VESTIBULE_route.fake.attach").await.unwrap();
    let mut detaches = nats.subscribe("VESTIBULE_route.fake.detach").await.unwrap();
    nats.flush().await.unwrap();
    let attach_tx = tx.clone();
    tokio::spawn(async move {
        while let Some(message) = attaches.next().await {
            let request: Value = serde_json::from_slice(&message.payload).unwrap();
            let seen = Seen::Attach {
                session: request["session"].as_str().unwrap().to_string(),
                frames: request["frames"].as_str().unwrap().to_string(),
                reply: message.reply.unwrap(),
            };
            let _ = attach_tx.send(seen);
        }
    });
    tokio::spawn(async move {
        while let Some(message) = detaches.next().await {
            let request: Value = serde_json::from_slice(&message.payload).unwrap();
            if let Some(frames) = request["frames"].as_str() {
                let _ = tx.send(Seen::GivenUp { frames: frames.to_string() });
            }
        }
    });
    rx
}

/// A session created on `b`, then handed to `fake` in the owner entries (as if `fake` owned it).
async fn session_owned_by_fake(b: &Gateway, nats: &async_nats::Client, source: IpAddr) -> (String, String) {
    let client = Client::create_from(b, source, json!({})).await;
    let (session, token) = (client.session_id.clone(), client.resume_token.clone());
    client.close().await;
    let owners = async_nats::jetstream::new(nats.clone()).get_key_value("VESTIBULE_owners").await.unwrap();
    owners.put(&session, json!({ "gateway": "fake", "epoch": FAKE_EPOCH }).to_string().into()).await.unwrap();
    (session, token)
}

/// A socket to `b` that has sent a resume `hello` of `session` (and waits for nothing).
async fn resume_hello(b: &Gateway, source: IpAddr, session: &str, token: &str) -> WebSocketStream<MaybeTlsStream<TcpStream>> {
    let mut ws = connect_from(b, source).await;
    let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session, "resumeToken": token });
    send(&mut ws, hello).await;
    ws
}

async fn next(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    // Generous: `b` answers within one request timeout and one retry.
    tokio::time::timeout(Duration::from_secs(60), seen.recv()).await.expect("b sent the owner something").unwrap()
}

async fn moved(nats: &async_nats::Client, reply: async_nats::Subject) {
    nats.publish(reply, json!({ "status": "moved" }).to_string().into()).await.unwrap();
    nats.flush().await.unwrap();
}

#[tokio::test]
async fn a_proxy_stops_routing_a_resume_once_its_client_has_left_and_gives_up_the_attach_in_flight() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let b = Gateway::start(&config(&server));
    let nats = async_nats::connect(&server.url).await.unwrap();
    let mut seen = fake_owner(&nats).await;
    let (visitor, probe) = (IpAddr::from([127, 0, 0, 2]), IpAddr::from([127, 0, 0, 3]));
    let (session, token) = session_owned_by_fake(&b, &nats, visitor).await;
    let (probe_session, probe_token) = session_owned_by_fake(&b, &nats, probe).await;

    // Given a resume through `b` that the owner answers "moved" (b retries, as it must while the
    // client waits), then does not answer: the second attach is in flight
    let client = resume_hello(&b, visitor, &session, &token).await;
    let Seen::Attach { session: s, reply, .. } = next(&mut seen).await else { panic!("an attach first") };
    assert_eq!(s, session);
    moved(&nats, reply).await;
    let Seen::Attach { session: s, frames: in_flight, .. } = next(&mut seen).await else { panic!("b retried the attach") };
    assert_eq!(s, session);

    // When the client leaves (its socket closed, no close frame)
    drop(client);

    // Then b gives up on the attach in flight (the owner would drop its link, or not build it)
    let Seen::GivenUp { frames } = next(&mut seen).await else { panic!("b attached again instead of giving up") };
    assert_eq!(frames, in_flight);

    // And sends no attach for it again: fenced by another visitor's resume, whose attaches the
    // owner answers "moved" three times (two of b's retry periods: a retry for the first session,
    // if its route still ran, would have come between them)
    let prober = resume_hello(&b, probe, &probe_session, &probe_token).await;
    let mut probe_attaches = 0;
    while probe_attaches < 3 {
        match next(&mut seen).await {
            Seen::Attach { session: s, reply, .. } if s == probe_session => {
                probe_attaches += 1;
                moved(&nats, reply).await;
            }
            Seen::Attach { session: s, .. } => panic!("b attached {s} again after its client had left"),
            Seen::GivenUp { frames } => panic!("an unexpected give-up of {frames}"),
        }
    }
    drop(prober);
}

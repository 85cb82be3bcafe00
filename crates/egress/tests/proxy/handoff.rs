//! The hand-over of a private view's listener on the proxy's UNIX socket
//! (Linux, where the views are): a listener taken is served and judged
//! until its connection closes; what is not one loopback listener is
//! refused and never served; at most eight are held, and a slot is freed
//! when its connection closes.

use std::io::Read as _;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use agentcaps_egress::proxy::handoff::{HANDOFF, MAX_HANDED_OVER, REFUSED, TAKEN};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::policy;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::unix::{exchange, unix_proxy};

/// Sends `byte` carrying `fds` on a new connection to `path`, as a view's
/// first process does (from a blocking thread), shutting the sending side
/// when `shut`; the connection and the proxy's one-byte answer (`None`: it
/// closed without one).
async fn send(path: &Path, fds: Vec<OwnedFd>, byte: u8, shut: bool) -> (UnixStream, Option<u8>) {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut stream = UnixStream::connect(path).unwrap();
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|fd| fd.as_fd()).collect();
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !borrowed.is_empty() {
            assert!(control.push(SendAncillaryMessage::ScmRights(&borrowed)));
        }
        rustix::net::sendmsg(
            &stream,
            &[std::io::IoSlice::new(&[byte])],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
        if shut {
            stream.shutdown(std::net::Shutdown::Write).unwrap();
        }
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut answer = [0u8; 1];
        let answer = match stream.read(&mut answer) {
            Ok(1) => Some(answer[0]),
            _ => None,
        };
        (stream, answer)
    })
    .await
    .unwrap()
}

/// Hands a copy of `listener` over; the connection to hold if taken.
async fn hand_over(listener: &TcpListener, path: &Path) -> Option<UnixStream> {
    let fd = OwnedFd::from(listener.try_clone().unwrap());
    match send(path, vec![fd], HANDOFF, false).await {
        (stream, Some(TAKEN)) => Some(stream),
        _ => None,
    }
}

/// The answer to a hand-over of `fds` that starts with `byte`.
async fn answer(path: &Path, fds: Vec<OwnedFd>, byte: u8) -> Option<u8> {
    send(path, fds, byte, true).await.1
}

/// What `attempt` gives once it gives something, trying every 20 ms for up
/// to ten seconds.
async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut attempt: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(done) = attempt().await {
            return done;
        }
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether nothing listens at `addr` any more (`None`: something accepts,
/// or a connection queued as the listener closed was reset: no answer yet).
async fn refused(addr: SocketAddr) -> Option<()> {
    match tokio::net::TcpStream::connect(addr).await {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
        Err(e) => panic!("{e}"),
        Ok(_) => None,
    }
}

/// One request on a new TCP connection to `addr`, read to the end.
async fn tcp_exchange(addr: SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

fn loopback_listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_listener_is_served_and_judged_until_its_connection_closes() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("handed"))).await;
    let p = server.port();
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("inward.example.com", vec![Rec::ip("10.0.0.1")]);
    let config = policy(&dns, &["127.0.0.2/32"], &[p]);
    let (proxy, path, dir) = unix_proxy("handoff", &config).await;
    let listener = loopback_listener();
    let addr = listener.local_addr().unwrap();
    let control = hand_over(&listener, &path).await.expect("taken");
    // The proxy holds the listener now; the view's first process closes its
    // own copy (nobody else accepts on it).
    drop(listener);
    let allowed = format!(
        "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let ok = tcp_exchange(addr, &allowed).await;
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("handed"),
        "{ok}"
    );
    let inward = format!("GET http://inward.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n");
    let refused_plain = tcp_exchange(addr, &inward).await;
    assert!(
        refused_plain.starts_with("HTTP/1.1 403")
            && refused_plain.contains("x-agentcaps-rule: address.special-purpose"),
        "{refused_plain}"
    );
    let refused_tunnel =
        tcp_exchange(addr, "CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(
        refused_tunnel.starts_with("HTTP/1.1 403"),
        "{refused_tunnel}"
    );
    assert_eq!(server.hits(), 1);
    assert_eq!(proxy.log().entries().len(), 3);
    // The UNIX socket still proxies plain HTTP as before.
    let still = exchange(&path, &allowed).await;
    assert!(still.starts_with("HTTP/1.1 200"), "{still}");
    // Its connection closed (the view ended): the listener is closed.
    drop(control);
    eventually(
        "the handed-over listener still accepts after its connection closed",
        || refused(addr),
    )
    .await;
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_one_loopback_listener_is_refused_as_a_handoff() {
    let dns = DnsServer::start().await;
    let config = policy(&dns, &["127.0.0.2/32"], &[80]);
    let (proxy, path, dir) = unix_proxy("handoff-refused", &config).await;
    // A connected (not listening) TCP socket.
    let listening = loopback_listener();
    let connected = std::net::TcpStream::connect(listening.local_addr().unwrap()).unwrap();
    assert_eq!(
        answer(&path, vec![connected.into()], HANDOFF).await,
        Some(REFUSED)
    );
    // A listening UNIX socket.
    let unix_listener = std::os::unix::net::UnixListener::bind(dir.join("other.sock")).unwrap();
    assert_eq!(
        answer(&path, vec![unix_listener.into()], HANDOFF).await,
        Some(REFUSED)
    );
    // A listener on every address, not loopback.
    let wildcard = TcpListener::bind("0.0.0.0:0").unwrap();
    assert_eq!(
        answer(&path, vec![wildcard.into()], HANDOFF).await,
        Some(REFUSED)
    );
    // Two listeners in one hand-over.
    let two = vec![loopback_listener().into(), loopback_listener().into()];
    assert_eq!(answer(&path, two, HANDOFF).await, Some(REFUSED));
    // A 0 byte and no descriptor.
    assert_eq!(answer(&path, vec![], HANDOFF).await, Some(REFUSED));
    // A descriptor after another first byte is HTTP, not a hand-over: the
    // descriptor is dropped unread and never served.
    let listener = loopback_listener();
    let addr = listener.local_addr().unwrap();
    assert_ne!(
        answer(&path, vec![listener.into()], b'G').await,
        Some(TAKEN)
    );
    assert!(
        refused(addr).await.is_some(),
        "a listener sent after HTTP is served"
    );
    // None of them was served or kept a slot: nothing was logged, and all
    // eight slots are free.
    assert!(proxy.log().entries().is_empty());
    let listeners: Vec<TcpListener> = (0..MAX_HANDED_OVER).map(|_| loopback_listener()).collect();
    let mut held = Vec::new();
    for listener in &listeners {
        held.push(hand_over(listener, &path).await.expect("a free slot"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_holds_at_most_eight_handed_over_listeners_and_frees_their_slots() {
    let dns = DnsServer::start().await;
    let config = policy(&dns, &["127.0.0.2/32"], &[80]);
    let (proxy, path, dir) = unix_proxy("handoff-many", &config).await;
    assert_eq!(MAX_HANDED_OVER, 8);
    let listeners: Vec<TcpListener> = (0..MAX_HANDED_OVER).map(|_| loopback_listener()).collect();
    let mut held = Vec::new();
    for listener in &listeners {
        held.push(hand_over(listener, &path).await.expect("taken"));
    }
    let one_more = loopback_listener();
    let fd = OwnedFd::from(one_more.try_clone().unwrap());
    assert_eq!(answer(&path, vec![fd], HANDOFF).await, Some(REFUSED));
    // One closes: its slot is free again.
    drop(held.pop());
    held.push(eventually("the slot was never freed", || hand_over(&one_more, &path)).await);
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

//! The proxy on a UNIX socket (what a relay inside a private network view
//! talks to): the same judgement, over a stream of another kind; and, on
//! Linux, the hand-over of a view's listener.

#[cfg(target_os = "linux")]
use agentcaps_egress::proxy::handoff;
use agentcaps_egress::proxy::{Proxy, ProxyDecision};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::policy;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};

async fn exchange(path: &std::path::Path, request: &str) -> String {
    let mut stream = UnixStream::connect(path).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_on_a_unix_socket_judges_like_the_tcp_one() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("via unix"))).await;
    let p = server.port();
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("inward.example.com", vec![Rec::ip("10.0.0.1")]);
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-unix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("proxy.sock");
    let config = policy(&dns, &["127.0.0.2/32"], &[p]);
    let proxy = Proxy::bind_unix(config.build().unwrap(), &path)
        .await
        .unwrap();
    assert_eq!(proxy.local_addr(), None);
    let ok = exchange(
        &path,
        &format!(
            "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("via unix"),
        "{ok}"
    );
    let refused = exchange(
        &path,
        &format!("GET http://inward.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
    )
    .await;
    assert!(
        refused.starts_with("HTTP/1.1 403")
            && refused.contains("x-agentcaps-rule: address.special-purpose"),
        "{refused}"
    );
    let origin_form = exchange(&path, "GET / HTTP/1.1\r\nHost: allowed.example.com\r\n\r\n").await;
    assert!(origin_form.starts_with("HTTP/1.1 400"), "{origin_form}");
    let decisions: Vec<ProxyDecision> = proxy.log().entries().iter().map(|e| e.decision).collect();
    assert_eq!(
        decisions,
        [
            ProxyDecision::Allow,
            ProxyDecision::Deny,
            ProxyDecision::Deny
        ]
    );
    assert_eq!(server.hits(), 1);
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A proxy on a fresh UNIX socket in a directory of its own.
#[cfg(target_os = "linux")]
async fn unix_proxy(
    tag: &str,
    config: &agentcaps_egress::EgressPolicyConfig,
) -> (Proxy, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("proxy.sock");
    let proxy = Proxy::bind_unix(config.build().unwrap(), &path)
        .await
        .unwrap();
    (proxy, path, dir)
}

/// One request on a new TCP connection to `addr`, read to the end.
#[cfg(target_os = "linux")]
async fn tcp_exchange(addr: std::net::SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// Hands `listener` over from a blocking thread, as a view's first
/// process does.
#[cfg(target_os = "linux")]
async fn hand_over(
    listener: &std::net::TcpListener,
    path: &std::path::Path,
) -> std::io::Result<std::os::unix::net::UnixStream> {
    let listener = listener.try_clone().unwrap();
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || handoff::hand_over(&listener, &path))
        .await
        .unwrap()
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_listener_is_served_and_judged_until_its_connection_closes() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("handed"))).await;
    let p = server.port();
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("inward.example.com", vec![Rec::ip("10.0.0.1")]);
    let config = policy(&dns, &["127.0.0.2/32"], &[p]);
    let (proxy, path, dir) = unix_proxy("handoff", &config).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let control = hand_over(&listener, &path).await.unwrap();
    // The proxy holds the listener now; the view's first process closes its
    // own copy (nobody else accepts on it).
    drop(listener);
    let ok = tcp_exchange(
        addr,
        &format!(
            "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("handed"),
        "{ok}"
    );
    let refused = tcp_exchange(
        addr,
        &format!("GET http://inward.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
    )
    .await;
    assert!(
        refused.starts_with("HTTP/1.1 403")
            && refused.contains("x-agentcaps-rule: address.special-purpose"),
        "{refused}"
    );
    let tunnel_refused =
        tcp_exchange(addr, "CONNECT 10.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(
        tunnel_refused.starts_with("HTTP/1.1 403"),
        "{tunnel_refused}"
    );
    assert_eq!(server.hits(), 1);
    assert_eq!(proxy.log().entries().len(), 3);
    // The UNIX socket still proxies plain HTTP as before.
    let still = exchange(
        &path,
        &format!(
            "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(still.starts_with("HTTP/1.1 200"), "{still}");
    // Its connection closed (the view ended): the listener is closed.
    drop(control);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            // Queued as the listener closed: reset; try again.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("{e}"),
            Ok(_) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the handed-over listener still accepts after its connection closed"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sends a `0` byte carrying `fds` on a new connection to `path`; the
/// proxy's one-byte answer (`None`: it closed without one).
#[cfg(target_os = "linux")]
fn raw_handoff(
    path: &std::path::Path,
    fds: &[std::os::fd::BorrowedFd<'_>],
    byte: u8,
) -> Option<u8> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::io::Read;
    let mut stream = std::os::unix::net::UnixStream::connect(path).unwrap();
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
    }
    rustix::net::sendmsg(
        &stream,
        &[std::io::IoSlice::new(&[byte])],
        &mut control,
        SendFlags::empty(),
    )
    .unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut answer = [0u8; 1];
    match stream.read(&mut answer) {
        Ok(1) => Some(answer[0]),
        _ => None,
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_not_one_loopback_listener_is_refused_as_a_handoff() {
    use std::os::fd::AsFd;
    let dns = DnsServer::start().await;
    let config = policy(&dns, &["127.0.0.2/32"], &[80]);
    let (proxy, path, dir) = unix_proxy("handoff-refused", &config).await;
    let refused = |fds: Vec<std::os::fd::OwnedFd>, byte: u8| {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let borrowed: Vec<_> = fds.iter().map(AsFd::as_fd).collect();
            raw_handoff(&path, &borrowed, byte)
        })
    };
    // A connected (not listening) TCP socket.
    let listening = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let connected = std::net::TcpStream::connect(listening.local_addr().unwrap()).unwrap();
    assert_eq!(
        refused(vec![connected.into()], 0).await.unwrap(),
        Some(b'-')
    );
    // A listening UNIX socket.
    let unix_listener = std::os::unix::net::UnixListener::bind(dir.join("other.sock")).unwrap();
    assert_eq!(
        refused(vec![unix_listener.into()], 0).await.unwrap(),
        Some(b'-')
    );
    // A listener on every address, not loopback.
    let wildcard = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    assert_eq!(refused(vec![wildcard.into()], 0).await.unwrap(), Some(b'-'));
    // Two listeners in one hand-over.
    let (a, b) = (
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    );
    assert_eq!(
        refused(vec![a.into(), b.into()], 0).await.unwrap(),
        Some(b'-')
    );
    // A 0 byte and no descriptor.
    assert_eq!(refused(vec![], 0).await.unwrap(), Some(b'-'));
    // A descriptor after another first byte is HTTP, not a hand-over: the
    // descriptor is dropped unread and never served.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    assert_ne!(
        refused(vec![listener.into()], b'G').await.unwrap(),
        Some(b'+')
    );
    let error = tokio::net::TcpStream::connect(addr).await.unwrap_err();
    assert_eq!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{error}"
    );
    // None of them is served: nothing was logged, no slot is held.
    assert!(proxy.log().entries().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_holds_at_most_eight_handed_over_listeners_and_frees_their_slots() {
    let dns = DnsServer::start().await;
    let config = policy(&dns, &["127.0.0.2/32"], &[80]);
    let (proxy, path, dir) = unix_proxy("handoff-many", &config).await;
    assert_eq!(handoff::MAX_HANDED_OVER, 8);
    let mut held = Vec::new();
    for _ in 0..handoff::MAX_HANDED_OVER {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        held.push(hand_over(&listener, &path).await.unwrap());
    }
    let one_more = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let error = hand_over(&one_more, &path).await.unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData, "{error}");
    // One closes: its slot is free again.
    drop(held.pop());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match hand_over(&one_more, &path).await {
            Ok(control) => {
                held.push(control);
                break;
            }
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "slot never freed: {e}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

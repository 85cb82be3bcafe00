//! What a `CONNECT` tunnel carries: cleartext HTTP inside is judged by the
//! method and header rules request by request (`curl -p`, a pipelined
//! request behind an allowed one), bytes that are neither TLS nor HTTP are
//! refused, a websocket through a tunnel (what the refusal of an
//! absolute-form upgrade advises) is relayed, and TLS goes through as
//! before (`clients::curl_tunnels_tls_to_an_allowed_name`).

use agentcaps_egress::proxy::{ProxyDecision, ProxyKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::clients::curl;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::{eventually, policy, proxy, url_of};

/// Reads an HTTP head (to the blank line) byte by byte.
async fn head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// A tunnel to `port` through the proxy at `at`, its `200` read.
async fn tunnel(at: std::net::SocketAddr, host: &str, port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(at).await.unwrap();
    let ask = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: x\r\n\r\n");
    stream.write_all(ask.as_bytes()).await.unwrap();
    let answer = head(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn http_inside_a_cleartext_tunnel_is_judged_by_the_method_and_header_rules() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| Reply::ok(&format!("{} reached", seen.method))),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let url = format!("http://allowed.example.com:{}/", server.port());
    let via = url_of(&proxy);
    let cases: [(&[&str], &str); 3] = [
        (&["-X", "DELETE"], "method"),
        (&["-H", "Metadata-Flavor: Google"], "header.reserved"),
        (
            &["-H", "X-HTTP-Method-Override: DELETE"],
            "header.method-override",
        ),
    ];
    for (args, rule) in cases {
        let run = curl(
            &via,
            &[&["-p", "-w", " %{http_code}"], args, &[url.as_str()]].concat(),
        )
        .await;
        assert!(
            run.stdout.ends_with(" 403")
                && run
                    .stdout
                    .contains(&format!("agentcaps proxy: deny [{rule}]")),
            "{args:?}: {} {}",
            run.stdout,
            run.stderr
        );
        let last = proxy.log().entries().pop().unwrap();
        assert_eq!(
            (last.kind, last.decision, last.rule.as_str(), last.address),
            (ProxyKind::Connect, ProxyDecision::Deny, rule, None),
            "{last:#?}"
        );
    }
    assert_eq!(server.hits(), 0, "a refused request reached the server");
    let run = curl(&via, &["-p", &url]).await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "GET reached"),
        "{}",
        run.stderr
    );

    // A refused request pipelined behind an allowed one in one tunnel.
    let mut stream = tunnel(
        proxy.local_addr().unwrap(),
        "allowed.example.com",
        server.port(),
    )
    .await;
    stream
        .write_all(
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\nDELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut answers = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut answers),
    )
    .await;
    let answers = String::from_utf8_lossy(&answers);
    assert!(
        answers.starts_with("HTTP/1.1 200")
            && answers.contains("GET reached")
            && answers.contains("HTTP/1.1 403")
            && answers.contains("[method]"),
        "{answers}"
    );
    assert_eq!(server.hits(), 2, "only the two allowed GETs reached it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_that_are_neither_tls_nor_http_are_refused_inside_a_tunnel() {
    let dns = DnsServer::start().await;
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got).await;
        got
    });
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[port])).await;
    let mut stream = tunnel(proxy.local_addr().unwrap(), "allowed.example.com", port).await;
    stream
        .write_all(b"\x00\x01 not a request\r\n\r\n")
        .await
        .unwrap();
    let answer = head(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    drop(stream);
    let got = upstream.await.unwrap();
    assert!(got.is_empty(), "the target got {got:?}");
    let log = proxy.log();
    eventually("the rejection listed", || log.entries().len() == 2).await;
    let rejected = &log.entries()[1];
    assert_eq!(
        (rejected.kind, rejected.decision, rejected.rule.as_str()),
        (ProxyKind::Connect, ProxyDecision::Deny, "request.malformed"),
        "{rejected:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_through_a_tunnel_is_relayed() {
    let dns = DnsServer::start().await;
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Switches protocols, then echoes every byte.
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let asked = head(&mut stream).await.to_ascii_lowercase();
        assert!(asked.contains("upgrade: websocket"), "{asked}");
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => stream.write_all(&buf[..n]).await.unwrap(),
            }
        }
    });
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[port])).await;
    let mut stream = tunnel(proxy.local_addr().unwrap(), "allowed.example.com", port).await;
    stream
        .write_all(b"GET /ws HTTP/1.1\r\nHost: allowed.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
        .await
        .unwrap();
    let switched = head(&mut stream).await;
    assert!(switched.starts_with("HTTP/1.1 101"), "{switched}");
    stream.write_all(b"\x81\x04ping").await.unwrap();
    let mut echo = [0u8; 6];
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_exact(&mut echo),
    )
    .await
    .expect("echoed in time")
    .unwrap();
    assert_eq!(&echo, b"\x81\x04ping");
}

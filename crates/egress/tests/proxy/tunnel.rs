//! What a `CONNECT` tunnel carries: every byte, in order, both ways, with
//! the bytes a client sends right behind its `CONNECT` (before the `200`)
//! delivered first, and each side's end of sending passed on while the
//! other side goes on sending — over a TCP and a UNIX-socket listener.
//! The bytes start as a TLS record does (a tunnel carries TLS, or HTTP
//! that is judged: see `inside`).

use agentcaps_egress::proxy::Proxy;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::policy;
use crate::support::dns::DnsServer;

const UP: usize = 3 * 1024 * 1024 + 17;
const DOWN: usize = 4 * 1024 * 1024 + 5;
const EARLY: &[u8] = b"\x16\x03\x01early bytes behind the CONNECT head";

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + seed) % 251) as u8).collect()
}

/// A server that reads until the client stops sending, then answers
/// `DOWN` bytes and closes; gives back what it read.
async fn server() -> (u16, tokio::task::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).await.unwrap();
        stream.write_all(&pattern(DOWN, 3)).await.unwrap();
        stream.shutdown().await.unwrap();
        got
    });
    (port, task)
}

/// Through `stream` (connected to the proxy): `CONNECT` with early bytes,
/// `UP` bytes up and the end of sending, everything read back to the end.
async fn through(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    port: u16,
    server_read: tokio::task::JoinHandle<Vec<u8>>,
) {
    let (mut read, mut write) = tokio::io::split(stream);
    let mut ask = format!("CONNECT 127.0.0.2:{port} HTTP/1.1\r\nHost: x\r\n\r\n").into_bytes();
    ask.extend_from_slice(EARLY);
    write.write_all(&ask).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        read.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let up = pattern(UP, 1);
    let sender = tokio::spawn(async move {
        write.write_all(&up).await.unwrap();
        write.shutdown().await.unwrap();
        write
    });
    let mut down = Vec::new();
    read.read_to_end(&mut down).await.unwrap();
    drop(sender.await.unwrap());
    assert!(
        down == pattern(DOWN, 3),
        "{} bytes back, not the {DOWN} sent",
        down.len()
    );
    let got = server_read.await.unwrap();
    let mut expected = EARLY.to_vec();
    expected.extend_from_slice(&pattern(UP, 1));
    assert!(
        got == expected,
        "{} bytes upstream, not the {} sent",
        got.len(),
        expected.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_carries_every_byte_both_ways_and_each_end_of_sending() {
    let dns = DnsServer::start().await;
    let (port, server_read) = server().await;
    let config = policy(&dns, &["127.0.0.2/32"], &[port]);
    let proxy = Proxy::bind(config.build().unwrap(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let stream = tokio::net::TcpStream::connect(proxy.local_addr().unwrap())
        .await
        .unwrap();
    through(stream, port, server_read).await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tunnel_through_a_unix_socket_carries_every_byte_both_ways() {
    let dns = DnsServer::start().await;
    let (port, server_read) = server().await;
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-tunnel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("proxy.sock");
    let config = policy(&dns, &["127.0.0.2/32"], &[port]);
    let proxy = Proxy::bind_unix(config.build().unwrap(), &path)
        .await
        .unwrap();
    let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    through(stream, port, server_read).await;
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

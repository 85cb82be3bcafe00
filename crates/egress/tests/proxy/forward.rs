//! What a forwarded request carries: a request body up, a large response
//! body down, both through one pooled upstream connection in turn.

use crate::clients::curl;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::{policy, proxy, url_of};

const UP: usize = 1024 * 1024 + 3;
const DOWN: usize = 3 * 1024 * 1024 + 1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn bodies_go_through_whole_both_ways_on_one_pooled_connection() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| {
            if seen.path == "/big" {
                Reply::ok(&"d".repeat(DOWN))
            } else {
                let whole = seen
                    .body
                    .iter()
                    .enumerate()
                    .all(|(i, b)| *b == (i % 251) as u8);
                Reply::ok(&format!("{} {} {whole};", seen.method, seen.body.len()))
            }
        }),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let mut config = policy(&dns, &["127.0.0.2/32"], &[server.port()]);
    config.allowed_methods = vec!["GET".into(), "POST".into()];
    let proxy = proxy(&config).await;
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-forward-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let upload = dir.join("upload");
    std::fs::write(
        &upload,
        (0..UP).map(|i| (i % 251) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    let base = format!("http://allowed.example.com:{}", server.port());
    let via = url_of(&proxy);
    let run = curl(
        &via,
        &[
            "--data-binary",
            &format!("@{}", upload.display()),
            &format!("{base}/up"),
            "--next",
            "--proxy",
            &via,
            &format!("{base}/big"),
            "--next",
            "--proxy",
            &via,
            &format!("{base}/after"),
        ],
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expected = format!("POST {UP} true;{}GET 0 true;", "d".repeat(DOWN));
    assert!(
        run.stdout == expected,
        "{} bytes came back, not the {} expected: {:?}",
        run.stdout.len(),
        expected.len(),
        run.stdout.get(..200)
    );
    assert_eq!(server.connections(), 1, "one pooled upstream connection");
}

//! A tunnel's bytes, copied both ways until each side has finished sending
//! (then the other side's sending half is shut), or until either fails.
//! The relay only moves the bytes; it never looks at them.
//!
//! Copied through a 64 KiB buffer each way. Moving them with `splice`
//! through a pipe (no copy into the proxy) was measured on loopback: no
//! gain for a 100 MB download, and slower small exchanges (a "would
//! block" costs a system call more per message), so the copy stays.

use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Buffer of each direction.
const BUFFER: usize = 64 * 1024;

/// Relays between the client (its upgraded connection) and `upstream`.
pub(super) async fn relay(client: Upgraded, mut upstream: TcpStream) {
    let mut client = TokioIo::new(client);
    let _ =
        tokio::io::copy_bidirectional_with_sizes(&mut client, &mut upstream, BUFFER, BUFFER).await;
}

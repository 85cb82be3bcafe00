//! The relay inside a view: `127.0.0.1:PORT` in the view's own network
//! namespace, each connection passed byte for byte to the proxy's UNIX
//! socket (bind-mounted into the view). Threads of the view's first
//! process, started before the command; they end with it.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Connections relayed at once; more are closed at once.
const MAX_CONNECTIONS: usize = 256;

/// Listens on `127.0.0.1:port` now (so the command finds it at once) and
/// relays on a thread of its own.
pub(crate) fn start(port: u16, socket: &Path) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let socket = socket.to_path_buf();
    std::thread::Builder::new()
        .name("agentcaps-relay".to_owned())
        .spawn(move || accept(&listener, &socket))?;
    Ok(())
}

fn accept(listener: &TcpListener, socket: &Path) {
    let live = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(client) = stream else { continue };
        if live.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            continue; // dropped: closed
        }
        let Ok(proxy) = UnixStream::connect(socket) else {
            continue;
        };
        live.fetch_add(1, Ordering::SeqCst);
        let live = live.clone();
        let _ = std::thread::Builder::new()
            .name("agentcaps-relay-conn".to_owned())
            .spawn(move || {
                relay(client, proxy);
                live.fetch_sub(1, Ordering::SeqCst);
            });
    }
}

/// Copies both ways; each end is passed on as a write shutdown.
fn relay(client: TcpStream, proxy: UnixStream) {
    let (Ok(mut client_read), Ok(mut proxy_write)) = (client.try_clone(), proxy.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut client_read, &mut proxy_write);
        let _ = proxy_write.shutdown(Shutdown::Write);
    });
    let (mut proxy_read, mut client_write) = (proxy, client);
    let _ = io::copy(&mut proxy_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    let _ = up.join();
}

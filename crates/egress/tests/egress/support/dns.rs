//! A real DNS server on loopback whose answers the test controls: fixed
//! answers, answers that change from one query to the next, CNAME chains,
//! NXDOMAIN, and silence.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, CNAME};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::net::UdpSocket;

/// One record of an answer.
#[derive(Debug, Clone)]
pub enum Rec {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
}

impl Rec {
    pub fn ip(s: &str) -> Rec {
        match s.parse::<IpAddr>().expect("test address") {
            IpAddr::V4(v4) => Rec::A(v4),
            IpAddr::V6(v6) => Rec::Aaaa(v6),
        }
    }
}

#[derive(Default)]
struct Zone {
    /// Answers by query number (per record type); the last one repeats.
    sequence: Vec<Vec<Rec>>,
    silent: bool,
}

#[derive(Default)]
struct State {
    zones: HashMap<String, Zone>,
    counts: HashMap<(String, RecordType), usize>,
}

/// The server; dropped with the test's runtime.
pub struct DnsServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl DnsServer {
    pub async fn start() -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0").await.expect("bind dns");
        let addr = socket.local_addr().expect("dns addr");
        let state = Arc::new(Mutex::new(State::default()));
        let task_state = state.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                let Ok((len, peer)) = socket.recv_from(&mut buf).await else {
                    return;
                };
                let Ok(query) = Message::from_vec(&buf[..len]) else {
                    continue;
                };
                if let Some(reply) = answer(&task_state, &query) {
                    let _ = socket.send_to(&reply, peer).await;
                }
            }
        });
        DnsServer { addr, state }
    }

    /// The same answer to every query.
    pub fn set(&self, name: &str, records: Vec<Rec>) {
        self.set_sequence(name, vec![records]);
    }

    /// The n-th A (and, separately, the n-th AAAA) query gets the n-th
    /// answer; the last answer repeats.
    pub fn set_sequence(&self, name: &str, sequence: Vec<Vec<Rec>>) {
        let mut state = self.state.lock().unwrap();
        state.zones.insert(
            key(name),
            Zone {
                sequence,
                silent: false,
            },
        );
    }

    /// Queries for `name` are never answered.
    pub fn set_silent(&self, name: &str) {
        let mut state = self.state.lock().unwrap();
        state.zones.insert(
            key(name),
            Zone {
                sequence: Vec::new(),
                silent: true,
            },
        );
    }

    /// How many queries (any type) `name` received.
    pub fn queries(&self, name: &str) -> usize {
        let state = self.state.lock().unwrap();
        state
            .counts
            .iter()
            .filter(|((n, _), _)| *n == key(name))
            .map(|(_, c)| *c)
            .sum()
    }

    /// The `dns_servers` entry for a policy.
    pub fn server(&self) -> String {
        self.addr.to_string()
    }
}

fn answer(state: &Mutex<State>, query: &Message) -> Option<Vec<u8>> {
    let q = query.queries().first()?.clone();
    let qname = key(&q.name().to_ascii());
    let qtype = q.query_type();
    let mut state = state.lock().unwrap();
    let count = {
        let c = state.counts.entry((qname.clone(), qtype)).or_insert(0);
        *c += 1;
        *c - 1
    };
    let mut reply = Message::new();
    reply
        .set_id(query.id())
        .set_message_type(MessageType::Response)
        .set_op_code(query.op_code())
        .set_recursion_desired(true)
        .set_recursion_available(true)
        .add_query(q.clone());
    let mut current = qname;
    let mut seen = 0;
    loop {
        seen += 1;
        let Some(zone) = state.zones.get(&current) else {
            if seen == 1 {
                reply.set_response_code(ResponseCode::NXDomain);
            }
            break;
        };
        if zone.silent {
            return None;
        }
        let index = count.min(zone.sequence.len().saturating_sub(1));
        let records = zone.sequence.get(index).cloned().unwrap_or_default();
        let owner = Name::from_ascii(format!("{current}.")).ok()?;
        let mut next = None;
        for rec in records {
            match rec {
                Rec::A(ip) if qtype == RecordType::A => {
                    reply.add_answer(Record::from_rdata(owner.clone(), 0, RData::A(A(ip))));
                }
                Rec::Aaaa(ip) if qtype == RecordType::AAAA => {
                    reply.add_answer(Record::from_rdata(owner.clone(), 0, RData::AAAA(AAAA(ip))));
                }
                Rec::Cname(target) => {
                    let t = Name::from_ascii(format!("{}.", key(&target))).ok()?;
                    reply.add_answer(Record::from_rdata(owner.clone(), 0, RData::CNAME(CNAME(t))));
                    next = Some(key(&target));
                }
                _ => {}
            }
        }
        match next {
            Some(n) if seen < 8 => current = n,
            _ => break,
        }
    }
    reply.to_vec().ok()
}

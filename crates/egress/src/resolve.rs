//! Resolution the client does itself: hickory-resolver, A and AAAA, no
//! search list, no hosts file; every answer returned for judging.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{
    LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::xfer::Protocol;
use hickory_resolver::{Name, TokioResolver};

use crate::error::{EgressError, NameRule, Phase};

/// The client's own resolver.
#[derive(Clone)]
pub(crate) struct DnsResolver {
    inner: TokioResolver,
    timeout: Duration,
}

impl std::fmt::Debug for DnsResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsResolver")
            .field("servers", &self.inner.config().name_servers().len())
            .finish()
    }
}

impl DnsResolver {
    /// A resolver for `servers` (UDP, TCP on truncation), or the system's
    /// name servers when `servers` is empty. The system's search list and
    /// hosts file are never used.
    pub(crate) fn new(servers: &[SocketAddr], timeout: Duration) -> Result<Self, EgressError> {
        let name_servers: Vec<NameServerConfig> = if servers.is_empty() {
            let (system, _) = hickory_resolver::system_conf::read_system_conf().map_err(|e| {
                EgressError::Config {
                    field: "dns_servers".to_owned(),
                    message: format!(
                        "no dns_servers given and the system's could not be read: {e}"
                    ),
                }
            })?;
            system.name_servers().to_vec()
        } else {
            servers
                .iter()
                .flat_map(|addr| {
                    [
                        NameServerConfig::new(*addr, Protocol::Udp),
                        NameServerConfig::new(*addr, Protocol::Tcp),
                    ]
                })
                .collect()
        };
        let config = ResolverConfig::from_parts(None, Vec::new(), name_servers);
        let mut opts = ResolverOpts::default();
        opts.ndots = 0;
        opts.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
        opts.use_hosts_file = ResolveHosts::Never;
        // Our own deadline (below) fires first and names the phase.
        opts.timeout = timeout.saturating_mul(2);
        opts.attempts = 1;
        opts.preserve_intermediates = true;
        let inner = TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
            .with_options(opts)
            .build();
        Ok(DnsResolver { inner, timeout })
    }

    /// Every A and AAAA address of `name` (CNAME chains followed by the
    /// resolver). The name is queried as a fully qualified name, so no
    /// search domain is ever appended.
    pub(crate) async fn lookup(&self, name: &str, url: &str) -> Result<Vec<IpAddr>, EgressError> {
        // Names are judged encodable before they get here; refuse by the
        // same rule if one is not, never fail as a DNS error.
        let fqdn = Name::from_ascii(format!("{name}.")).map_err(|e| EgressError::Name {
            name: name.to_owned(),
            rule: NameRule::Unencodable(e.to_string()),
        })?;
        let answer = tokio::time::timeout(self.timeout, self.inner.lookup_ip(fqdn))
            .await
            .map_err(|_| EgressError::Timeout {
                url: url.to_owned(),
                phase: Phase::Dns,
                limit_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            })?;
        let answer = answer.map_err(|e| {
            if e.is_no_records_found() {
                EgressError::Dns {
                    host: name.to_owned(),
                    message: "the name has no A or AAAA record".to_owned(),
                }
            } else {
                EgressError::Dns {
                    host: name.to_owned(),
                    message: e.to_string(),
                }
            }
        })?;
        let mut addrs: Vec<IpAddr> = answer.iter().collect();
        addrs.dedup();
        if addrs.is_empty() {
            return Err(EgressError::Dns {
                host: name.to_owned(),
                message: "the name has no A or AAAA record".to_owned(),
            });
        }
        Ok(addrs)
    }
}

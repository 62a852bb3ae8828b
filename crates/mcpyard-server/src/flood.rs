//! The HTTP flood guard: requests beyond a configured rate are answered 429
//! with `Retry-After`, before anything reads their headers or body
//! (authentication included, so a flood costs no token check). Two limits,
//! each optional: one per client, where a client is every address of one
//! prefix (/32 and /64 by default: one IPv6 host holds a /64, and so can
//! send from as many addresses as it likes), and one over all clients
//! together, which no number of addresses gets around. `GET /health` is
//! exempt: it reads nothing, and monitors polling it from one address must
//! not be locked out by the traffic of a client behind the same address.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota};

use crate::address::{AddressPrefix, AddressRate};
use crate::options::HttpOptions;

/// Which limit a request went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    /// Its client's (its address prefix's).
    Client,
    /// The one over all clients.
    Total,
}

/// The buckets: one per client, and one for all of them.
#[derive(Debug)]
pub(crate) struct Flood {
    per_client: Option<DefaultKeyedRateLimiter<IpAddr>>,
    prefix: AddressPrefix,
    total: Option<DefaultDirectRateLimiter>,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// Clients kept before the buckets back to full are forgotten.
const ADDRESSES_BEFORE_SWEEP: usize = 10_000;

fn quota(rate: AddressRate) -> Quota {
    Quota::per_second(rate.per_second).allow_burst(rate.burst)
}

impl Flood {
    /// The guard `opts` asks for, if any.
    pub(crate) fn new(opts: &HttpOptions) -> Option<Arc<Self>> {
        if opts.per_address.is_none() && opts.total_rate.is_none() {
            return None;
        }
        Some(Arc::new(Self {
            per_client: opts
                .per_address
                .map(|r| governor::RateLimiter::keyed(quota(r))),
            prefix: opts.address_prefix,
            total: opts
                .total_rate
                .map(|r| governor::RateLimiter::direct(quota(r))),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }))
    }

    /// `Err` with the limit and the seconds to wait when `address` may not
    /// send now. A client over its own limit uses up nothing of the total,
    /// so one flooding client does not shut the others out.
    fn check(&self, address: IpAddr) -> Result<(), (Over, u64)> {
        let wait = |not_until: governor::NotUntil<_>| {
            let wait = not_until.wait_time_from(self.clock.now());
            // Retry-After takes whole seconds: round up, so a client that
            // waits that long finds a token.
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        };
        if let Some(buckets) = &self.per_client {
            if self.checks.fetch_add(1, Ordering::Relaxed) % 4096 == 4095
                && buckets.len() > ADDRESSES_BEFORE_SWEEP
            {
                buckets.retain_recent();
            }
            buckets
                .check_key(&self.prefix.group_of(address))
                .map_err(|n| (Over::Client, wait(n)))?;
        }
        if let Some(total) = &self.total {
            total.check().map_err(|n| (Over::Total, wait(n)))?;
        }
        Ok(())
    }
}

/// `app` behind the flood guard, outermost of all, when a limit is set.
pub(crate) fn outermost(app: Router, flood: Option<Arc<Flood>>) -> Router {
    match flood {
        Some(flood) => app.layer(axum::middleware::from_fn_with_state(flood, limit)),
        None => app,
    }
}

/// The middleware. A request without a peer address (served without a
/// socket, as in tests of the router alone) passes.
pub(crate) async fn limit(
    State(flood): State<Arc<Flood>>,
    request: Request,
    next: Next,
) -> Response {
    match flood.refusal(&request) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

impl Flood {
    /// The 429 for `request` when its client, or all clients together,
    /// went over their limit.
    pub(crate) fn refusal(&self, request: &Request) -> Option<Response> {
        let address = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip())?;
        self.refusal_from(address, request.uri().path())
    }

    /// The 429 for a request to `path` from `address`, as [`Flood::refusal`].
    pub(crate) fn refusal_from(&self, address: IpAddr, path: &str) -> Option<Response> {
        if crate::probes::is_probe(path) {
            return None;
        }
        let (over, wait) = self.check(address).err()?;
        let wait = wait.max(1);
        let whose = match over {
            Over::Client => "from this address",
            Over::Total => "to this gateway from all clients",
        };
        tracing::debug!(%address, wait, ?over, "too many requests");
        let mut answer = (
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many requests {whose}; retry after {wait} s\n"),
        )
            .into_response();
        answer
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        Some(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    fn rate(per_second: u32, burst: u32) -> Option<AddressRate> {
        Some(AddressRate {
            per_second: NonZeroU32::new(per_second).unwrap(),
            burst: NonZeroU32::new(burst).unwrap(),
        })
    }

    fn flood(opts: HttpOptions) -> Arc<Flood> {
        Flood::new(&opts).expect("a limit is set")
    }

    #[test]
    fn one_address_over_its_rate_waits_and_others_do_not() {
        let flood = flood(HttpOptions {
            per_address: rate(1, 2),
            ..HttpOptions::default()
        });
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        assert!(flood.check(a).is_ok());
        assert!(flood.check(a).is_ok());
        assert_eq!(flood.check(a), Err((Over::Client, 1)));
        assert!(flood.check(b).is_ok());
    }

    #[test]
    fn addresses_of_one_prefix_are_one_client() {
        let flood = flood(HttpOptions {
            per_address: rate(1, 2),
            ..HttpOptions::default()
        });
        // By default every address of an IPv6 /64 is one client.
        let v6 = |last: u16| IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, last]);
        assert!(flood.check(v6(1)).is_ok());
        assert!(flood.check(v6(2)).is_ok());
        assert_eq!(flood.check(v6(3)), Err((Over::Client, 1)));
        assert!(flood
            .check(IpAddr::from([0x2001, 0xdb8, 0, 2, 0, 0, 0, 1]))
            .is_ok());
    }

    #[test]
    fn prefixes_group_as_configured() {
        let p = AddressPrefix { v4: 24, v6: 48 };
        assert_eq!(
            p.group_of([192, 0, 2, 77].into()),
            IpAddr::from([192, 0, 2, 0])
        );
        assert_eq!(
            p.group_of("2001:db8:1:2:3::4".parse().unwrap()),
            "2001:db8:1::".parse::<IpAddr>().unwrap()
        );
        // A dual-stack listener's view of an IPv4 client is that client.
        assert_eq!(
            p.group_of("::ffff:192.0.2.77".parse().unwrap()),
            IpAddr::from([192, 0, 2, 0])
        );
        let d = AddressPrefix::default();
        assert_eq!(
            d.group_of([192, 0, 2, 77].into()),
            IpAddr::from([192, 0, 2, 77])
        );
        assert_eq!(
            AddressPrefix { v4: 1, v6: 1 }.group_of([192, 0, 2, 77].into()),
            IpAddr::from([128, 0, 0, 0])
        );
    }

    #[test]
    fn the_total_caps_every_address_together() {
        let flood = flood(HttpOptions {
            per_address: rate(1, 2),
            total_rate: rate(1, 3),
            ..HttpOptions::default()
        });
        let through = (1..=10u8)
            .filter(|last| flood.check([127, 0, 0, *last].into()).is_ok())
            .count();
        assert_eq!(through, 3);
        assert!(matches!(
            flood.check([127, 0, 0, 99].into()),
            Err((Over::Total, _))
        ));
    }

    #[test]
    fn no_limit_no_guard() {
        assert!(Flood::new(&HttpOptions::default()).is_none());
    }
}

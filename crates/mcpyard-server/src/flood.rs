//! The HTTP flood guard: requests from one client address beyond a
//! configured rate are answered 429 with `Retry-After`, before anything
//! reads their headers or body (authentication included, so a flood costs
//! no token check). `GET /health` is exempt: it reads nothing, and
//! monitors polling it from one address must not be locked out by the
//! traffic of a client behind the same address.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// How many requests one client address may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressRate {
    /// Requests per second in the long run.
    pub per_second: NonZeroU32,
    /// Requests that may come at once after a quiet spell.
    pub burst: NonZeroU32,
}

/// The buckets, one per client address.
#[derive(Debug)]
pub(crate) struct Flood {
    buckets: DefaultKeyedRateLimiter<IpAddr>,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// Addresses kept before the buckets back to full are forgotten.
const ADDRESSES_BEFORE_SWEEP: usize = 10_000;

impl Flood {
    pub(crate) fn new(rate: AddressRate) -> Arc<Self> {
        let quota = Quota::per_second(rate.per_second).allow_burst(rate.burst);
        Arc::new(Self {
            buckets: governor::RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        })
    }

    /// `Err(seconds to wait)` when `address` is over its rate.
    fn check(&self, address: IpAddr) -> Result<(), u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % 4096 == 4095
            && self.buckets.len() > ADDRESSES_BEFORE_SWEEP
        {
            self.buckets.retain_recent();
        }
        self.buckets.check_key(&address).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            // Retry-After takes whole seconds: round up, so a client that
            // waits that long finds a token.
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }
}

/// `app` behind the flood guard, outermost of all, when a rate is set.
pub(crate) fn outermost(app: Router, rate: Option<AddressRate>) -> Router {
    match rate {
        Some(rate) => app.layer(axum::middleware::from_fn_with_state(
            Flood::new(rate),
            limit,
        )),
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
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let exempt = request.uri().path() == "/health";
    if let (Some(address), false) = (peer, exempt) {
        if let Err(wait) = flood.check(address) {
            let wait = wait.max(1);
            tracing::debug!(%address, wait, "too many requests from one address");
            let mut answer = (
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many requests from this address; retry after {wait} s\n"),
            )
                .into_response();
            answer
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(wait));
            return answer;
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_over_its_rate_waits_and_others_do_not() {
        let flood = Flood::new(AddressRate {
            per_second: NonZeroU32::new(1).unwrap(),
            burst: NonZeroU32::new(2).unwrap(),
        });
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        assert!(flood.check(a).is_ok());
        assert!(flood.check(a).is_ok());
        assert_eq!(flood.check(a), Err(1));
        assert!(flood.check(b).is_ok());
    }
}

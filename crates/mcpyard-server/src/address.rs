//! Which addresses count as one client, and the request rates the flood
//! guard allows them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::num::NonZeroU32;

/// A request rate: per client for `HttpOptions::per_address`, over all
/// clients for `HttpOptions::total_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressRate {
    /// Requests per second in the long run.
    pub per_second: NonZeroU32,
    /// Requests that may come at once after a quiet spell.
    pub burst: NonZeroU32,
}

/// Which addresses count as one client for `HttpOptions::per_address`:
/// those that share their first `v4` (IPv4) or `v6` (IPv6) bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPrefix {
    /// 1 to 32; 32, each address alone, by default.
    pub v4: u8,
    /// 1 to 128; 64, the usual size of one site's subnet, by default.
    pub v6: u8,
}

impl Default for AddressPrefix {
    fn default() -> Self {
        Self { v4: 32, v6: 64 }
    }
}

impl AddressPrefix {
    /// The first address of `address`'s prefix, which stands for all of
    /// them. An IPv4 address mapped into IPv6 (a dual-stack listener's
    /// view of an IPv4 client) is taken as the IPv4 address it is.
    pub fn group_of(self, address: IpAddr) -> IpAddr {
        match address.to_canonical() {
            IpAddr::V4(a) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.v4.min(32)))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.v6.min(128)))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
            }
        }
    }
}
